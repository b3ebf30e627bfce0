"""Runs under Slurm: the job submitted with sbatch, read back from squeue, sacct, scontrol or
the exit record, cancelled with scancel, requeued with scontrol; each node reached through
``srun --overlap`` inside the allocation. The commands run on the host's transport (the login
node over SSH, or this machine); every argument is quoted, every answer capped and made safe."""
