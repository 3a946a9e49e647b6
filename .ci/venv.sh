# Sourced by .ci/demo and .ci/test: python3 with its venv module (Debian's python3 refuses a
# bare `pip install` outside a venv, and ships venv as the python3-venv package), then the
# checkout's own venv .venv (ignored by git) with a current pip.
as_root=()
if [ "$(id -u)" -ne 0 ]; then
    as_root=(sudo)
fi
if ! command -v python3 >/dev/null 2>&1 || ! python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then
    echo "venv: installing python3 and python3-venv (Debian packages)"
    "${as_root[@]}" apt-get update
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y python3 python3-venv
fi
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
