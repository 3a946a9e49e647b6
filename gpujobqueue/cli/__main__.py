"""``python -m gpujobqueue.cli``, as the ``gpujobqueue`` command."""

from .main import main

main()
