#!/usr/bin/env bash
# Install Son of Grid Engine 8.1.9 (Debian packages) for tests/fixtures/sge.py.
# Idempotent: does nothing when the packages are already there.  The packages create
# the cell `default` under SGE_ROOT=/var/lib/gridengine and start no daemon here; the
# fixture starts sge_qmaster and sge_execd itself.
set -euo pipefail

export PATH="$PATH:/usr/sbin:/sbin"
packages=(gridengine-master gridengine-exec gridengine-client)

missing=()
for pkg in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' \
        || missing+=("$pkg")
done

as_root=()
if [ "$(id -u)" -ne 0 ]; then
    as_root=(sudo)
fi

if [ "${#missing[@]}" -eq 0 ]; then
    echo "install-sge: gridengine already installed"
else
    echo "install-sge: missing ${missing[*]}; installing"
    # Answers to the questions all gridengine packages share, so that the postinst sets
    # up the package's cell `default` for localhost without asking.  (The fixture makes a
    # private SGE_ROOT and cell of its own and uses only the installed binaries.)
    "${as_root[@]}" debconf-set-selections <<'EOF'
gridengine-common shared/gridenginemaster string localhost
gridengine-common shared/gridenginecell string default
gridengine-common shared/gridengineconfig boolean true
EOF
    "${as_root[@]}" apt-get update
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y "${packages[@]}"
fi

version=$(SGE_ROOT=/var/lib/gridengine SGE_CELL=default /usr/lib/gridengine/qstat -help 2>/dev/null \
    | head -n 1 || true)
if [ -z "$version" ]; then
    echo "install-sge: /usr/lib/gridengine/qstat does not run" >&2
    exit 1
fi
echo "$version"
