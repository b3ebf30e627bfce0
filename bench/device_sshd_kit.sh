#!/usr/bin/env bash
# Fills .sshd/ (ignored; carried to the device machine, which has no OpenSSH server and no
# network) with this Debian machine's OpenSSH server: sshd, ssh-keygen, the helpers sshd execs
# from /usr/lib/openssh (sshd-session and sshd-auth where this OpenSSH has them), and every
# shared library they load except glibc's own, which the device's newer glibc provides (glibc
# is backward compatible; libcrypto, libpam, libkrb5, libsystemd, ... may be absent there or
# another version). The loopback sshd of tests/integration runs it with
#   DFLASH_TUI_TEST_SSHD=$PWD/.sshd/bin/sshd DFLASH_TUI_TEST_SSHD_LIBS=$PWD/.sshd/lib
# Run here, as root, from anywhere: bash bench/device_sshd_kit.sh
set -euo pipefail
cd "$(dirname "$0")/.."
if ! [ -x /usr/sbin/sshd ]; then
  apt-get install -y -q --no-install-recommends openssh-server >/dev/null
fi
KIT=.sshd
rm -rf "$KIT"
mkdir -p "$KIT/bin" "$KIT/lib"
bins=(/usr/sbin/sshd /usr/bin/ssh-keygen)
for helper in sshd-session sshd-auth; do  # split out of sshd from OpenSSH 9.8 and 10.0 on
  [ -x "/usr/lib/openssh/$helper" ] && bins+=("/usr/lib/openssh/$helper")
done
cp -L "${bins[@]}" "$KIT/bin/"
# glibc's libraries stay behind: the device's loader must be the one its libc came with.
GLIBC='^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|libresolv|librt|libutil|libanl)\.so'
for b in "${bins[@]}"; do
  ldd "$b" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name path; do
  [[ $name =~ $GLIBC ]] && continue
  cp -L "$path" "$KIT/lib/$name"
done
{
  echo "built on: $(. /etc/os-release && echo "$PRETTY_NAME") glibc $(ldd --version | head -1 | awk '{print $NF}')"
  /usr/sbin/sshd -V 2>&1 | head -1 || true
  echo "needs glibc symbols up to: $(objdump -T "$KIT"/bin/* "$KIT"/lib/* 2>/dev/null |
    grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)"
} >"$KIT/VERSION"
cat "$KIT/VERSION"
ls "$KIT/bin" "$KIT/lib" | tr '\n' ' '
echo
du -sh "$KIT"
