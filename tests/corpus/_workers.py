"""The worker command lines of a job script, parsed by the worker CLIs' own click commands.

A line that runs ``<python> -m <module> ...`` outside a here-document is a worker line when the
module is a Dask worker CLI (distributed's or dask-cuda's, or any module a snippet names as its
``worker_command``). Its arguments are handed to that module's click command with
``make_context``, which parses and converts every option as the CLI would, and starts nothing.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
import shlex
import tempfile
from pathlib import Path
from typing import Any

import click

HEREDOC = re.compile(r"<<-?\s*['\"]?(\w+)['\"]?")
READ_HEREDOC = re.compile(r"^read\s+-r\s+-d\s+''\s+(\w+)\s+<<-?\s*['\"]?(\w+)['\"]?\s*$")
ASSIGNMENT = re.compile(r"^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$")
REFERENCE = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?")
ENV_WORD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
MODULE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
NOT_WORKERS = ("distributed.cli.dask_scheduler", "dask_cuda.cli.dask_config")


def shell_lines(script: str) -> list[str]:
    """The script's command lines: continuations joined, here-document bodies and comments left out."""
    lines, end_tag = [], None
    for line in script.replace("\\\n", " ").splitlines():
        if end_tag is not None:
            if line.strip() == end_tag:
                end_tag = None
            continue
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        lines.append(stripped)
        match = HEREDOC.search(stripped)
        if match:
            end_tag = match.group(1)
    return lines


def shell_variables(script: str) -> dict[str, str]:
    """The values the script gives its variables where the shell would know them before the worker line:
    ``read -r -d '' NAME <<'TAG'`` here-documents and plain ``NAME=value`` assignments."""
    values, reading, body = {}, None, []
    for line in script.splitlines():
        if reading is not None:
            name, tag = reading
            if line.strip() == tag:
                values[name], reading = "\n".join(body), None
            else:
                body.append(line)
            continue
        match = READ_HEREDOC.match(line.strip())
        if match:
            reading, body = (match.group(1), match.group(2)), []
            continue
        match = ASSIGNMENT.match(line.strip())
        if match and "$(" not in match.group(2) and "`" not in match.group(2):
            try:
                words = shlex.split(match.group(2))
            except ValueError:
                continue
            if len(words) == 1:
                values[match.group(1)] = expand(words[0], values)
    return values


def expand(word: str, values: dict[str, str]) -> str:
    """``$NAME`` and ``${NAME}`` replaced where the script set NAME; other references left as written."""
    return REFERENCE.sub(lambda match: values.get(match.group(1), match.group(0)), word)


def worker_lines(script: str) -> list[tuple[list[str], str, list[str]]]:
    """Each worker line as (launcher words before ``-m``, module, arguments after it)."""
    found, values = [], shell_variables(script)
    for line in shell_lines(script):
        if " -m " not in f" {line} ":
            continue
        try:
            words = shlex.split(line)
        except ValueError:
            continue
        if "-m" not in words:
            continue
        at = words.index("-m")
        module = words[at + 1] if at + 1 < len(words) else ""
        if not MODULE_NAME.match(module) or module in NOT_WORKERS:
            continue
        launcher = [word for word in words[:at] if not ENV_WORD.match(word)]
        arguments = [word.rstrip("&") if word.endswith("&") else word for word in words[at + 2 :]]
        arguments = [expand(word, values) for word in arguments if word]
        found.append((launcher, module, arguments))
    return found


def main_command(module: str) -> click.Command:
    """The click command that ``python -m <module>`` runs: the call in the module's ``__main__`` block."""
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(f"No module named {module!r}")
    tree = ast.parse(Path(spec.origin).read_text())
    for node in tree.body:
        if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test):
            for statement in ast.walk(node):
                if isinstance(statement, ast.Call) and isinstance(statement.func, ast.Name):
                    command = getattr(importlib.import_module(module), statement.func.id, None)
                    if isinstance(command, click.Command):
                        return command
    raise LookupError(f"{module} runs no click command under python -m")


def parse_line(launcher: list[str], module: str, arguments: list[str]) -> dict[str, Any]:
    """One worker line: its launcher, module, and the CLI's verdict on its arguments."""
    result: dict[str, Any] = {"launcher": launcher, "module": module, "arguments": arguments}
    try:
        command = main_command(module)
    except Exception as error:
        result["accepted"], result["error"] = False, f"{type(error).__name__}: {error}"
        return result
    try:
        context = command.make_context(f"python -m {module}", list(arguments))
    except click.ClickException as error:
        hint = spaced_words(arguments) or unknown_options(command, arguments)
        result["accepted"], result["error"] = False, error.format_message() + hint
    except Exception as error:  # a converter's own exception is the CLI refusing the value too
        result["accepted"], result["error"] = False, f"{type(error).__name__}: {error}"
    else:
        result["accepted"], result["params"] = True, context.params
    return result


def spaced_words(arguments: list[str]) -> str:
    """The option words that hold a space (an option and its value passed as one argument), named."""
    spaced = [word for word in arguments if word.startswith("-") and " " in word]
    return f" (one argument holds a space: {', '.join(map(repr, spaced))})" if spaced else ""


def unknown_options(command: click.Command, arguments: list[str]) -> str:
    """The option words the command does not define, named (dask-cuda's own message does not name them)."""
    known = {name for param in command.params for name in (*param.opts, *param.secondary_opts)}
    unknown = [word for word in arguments if word.startswith("--") and word.split("=")[0] not in known]
    return f" (options it does not have: {', '.join(unknown)})" if unknown else ""


def inspect_workers(script: str) -> list[dict[str, Any]]:
    """Every worker line of the script, parsed. The files a line reads from the job's private folder on its node
    (``$private_dir/worker-ca-file.pem``: the job copies them there before the workers start) stand in a folder of
    empty files of those names, where the CLI looks for them."""
    with tempfile.TemporaryDirectory() as folder:
        return [
            parse_line(launcher, module, [_in_folder(word, folder) for word in arguments])
            for launcher, module, arguments in worker_lines(script)
        ]


def _in_folder(word: str, folder: str) -> str:
    match = re.fullmatch(r"\$\{?private_dir\}?/([\w.-]+)", word)
    if match is None:
        return word
    path = Path(folder, match.group(1))
    path.touch()
    return str(path)


def launcher_problem(launcher: list[str]) -> str | None:
    """A launcher the shell cannot run as written: one word that holds spaces (a quoted command line)."""
    if launcher and " " in launcher[0]:
        return f"the interpreter is one word with spaces: {launcher[0]!r}"
    return None
