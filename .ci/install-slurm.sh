#!/usr/bin/env bash
# Install SLURM and munge (Debian packages) for tests/fixtures/slurm.py.
# Idempotent: does nothing when the binaries are already there.
set -euo pipefail

export PATH="$PATH:/usr/sbin:/sbin"
binaries=(slurmctld slurmd munged munge unmunge sbatch srun squeue scontrol scancel sinfo)

missing=()
for bin in "${binaries[@]}"; do
    command -v "$bin" >/dev/null 2>&1 || missing+=("$bin")
done

as_root=()
if [ "$(id -u)" -ne 0 ]; then
    as_root=(sudo)
fi

if [ "${#missing[@]}" -eq 0 ]; then
    echo "install-slurm: slurm and munge already installed"
else
    echo "install-slurm: missing ${missing[*]}; installing slurm-wlm and munge"
    "${as_root[@]}" apt-get update
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y slurm-wlm munge
fi

# The munge package creates the key on install; make sure it is there.
if [ ! -s /etc/munge/munge.key ]; then
    "${as_root[@]}" mungekey --create --force
    "${as_root[@]}" chown munge:munge /etc/munge/munge.key
    "${as_root[@]}" chmod 0400 /etc/munge/munge.key
fi

slurmd -V
