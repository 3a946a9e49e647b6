"""How a job script starts Python 3.10, which has no ``-P``, with the current directory off its module path:
``python "$private_dir/gpujobqueue_safe_path.py" -m MODULE ARGS``, or ``... - ARGS`` for code on stdin.

Python puts the folder of the file it runs first on the path (here the job's private folder): this file
takes it off before it imports anything, then runs the module as ``-m`` would. Each Python that
multiprocessing starts from this one (a nanny's worker, the resource tracker) runs ``python -c ...``, which
puts the current directory first: it takes that off too, before it imports multiprocessing; then
multiprocessing gives it this process's path. The standard library only: the job writes this file whole.
"""

import sys

del sys.path[0]

import multiprocessing.util  # noqa: E402
import runpy  # noqa: E402

_spawn = multiprocessing.util.spawnv_passfds
# `python -c` puts "" (the current directory) first on the path: pop it when it is there.
_OFF = "import sys; sys.path[0] or sys.path.pop(0); "


def _spawn_off(path, args, passfds):
    """multiprocessing's start of a Python, its ``-c`` code first taking the current directory off the path."""
    at = args.index("-c") + 1
    return _spawn(path, [*args[:at], _OFF + args[at], *args[at + 1 :]], passfds)


def main():
    """Run ``-m MODULE ARGS`` as ``python -P -m`` would, or ``- ARGS`` (the code on stdin)."""
    multiprocessing.util.spawnv_passfds = _spawn_off
    if sys.argv[1] == "-m":
        del sys.argv[:2]
        runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
    else:
        del sys.argv[0]
        exec(compile(sys.stdin.read(), "<stdin>", "exec"), {"__name__": "__main__"})


if __name__ == "__main__":
    main()
