"""asyncssh, imported without its import-time noise (the one place that imports it).

asyncssh names cryptography's DSA classes in its type aliases, and cryptography warns
(``CryptographyDeprecationWarning``) each time one is touched: five blocks on stderr for every
command that reaches a host over SSH, whatever algorithms are later chosen. That one warning
class is silenced for the import alone; any other warning, and this one from any later call,
is shown as usual.
"""

from __future__ import annotations

import warnings

from cryptography.utils import CryptographyDeprecationWarning

with warnings.catch_warnings():
    warnings.simplefilter("ignore", CryptographyDeprecationWarning)
    import asyncssh as asyncssh
    import asyncssh.config as asyncssh_config
    from asyncssh.encryption import get_encryption_algs

__all__ = ["asyncssh", "asyncssh_config", "get_encryption_algs"]
