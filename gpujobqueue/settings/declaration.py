"""What a keyword is: :class:`Keyword`, its name with its kind, parser, default, documentation, site-file key and
command-line option, and :func:`read_declared`, the one reading of keywords' values by their declarations
(:mod:`gpujobqueue.settings.keywords` holds the registry)."""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..errors import ValidationError

# The kinds of value a keyword takes, and so the form of its command-line option.
INT, TEXT, LIST, PAIRS, SWITCH, CHOICE = "int", "text", "list", "pairs", "switch", "choice"
_TYPE_DOCS = {INT: "int", TEXT: "str", LIST: "list of str", PAIRS: "dict", SWITCH: "bool", CHOICE: "str"}
_SCHEMAS: dict[str, dict[str, Any]] = {
    INT: {"type": "integer", "minimum": 1},
    TEXT: {"type": "string"},
    LIST: {"$ref": "#/$defs/lines"},
    PAIRS: {"type": "object", "additionalProperties": {"type": ["string", "integer"]}},
    SWITCH: {"type": "boolean"},
}
_FIRST_SENTENCE = re.compile(r"(.+?\.)(?:\s|$)", re.DOTALL)


@dataclass(frozen=True)
class NoOption:
    """A keyword that ``render`` cannot mirror as an option, and why (more than a few words)."""

    why: str


@dataclass(frozen=True)
class Computed:
    """A default the plan works out from the other settings, as the docstring says it (``how``)."""

    how: str


class Keyword(str):
    """A keyword's name (it is the name, as a string: ``gpus_per_node``, whose dask config key is
    ``gpujobqueue.<batch>.gpus-per-node``) with every fact the package derives from it."""

    kind: str  # int, text, list (a repeatable option), pairs (repeatable NAME=VALUE), switch (on/off) or choice
    # parse(field, value): the value read alone (a settings.validation parser with the plan's bounds), a
    # ValidationError naming field; None where the plan reads the value together with others.
    parse: Callable[[str, Any], Any] | None
    default: Any  # where nothing sets it; a Computed where the plan works it out; None for unset
    doc: str  # the docstring entry's text; its first sentence is --help's line
    site_key: str | None  # the site file's dotted key that sets it, whose schema site_schema_fragment generates
    # The option's click declarations (--<name with dashes>, --<name>/--no-<name> for a switch), or why there is none.
    option: tuple[str, ...] | NoOption
    type_doc: str  # the docstring's type, where the kind's is not enough (str, int or False)
    choices: Sequence[str] | Callable[[], Sequence[str]]  # a choice's values (a callable is asked when needed)
    site_schema: dict[str, Any]  # the value's JSON schema in the site file, where the kind's is not enough
    # dask-jobqueue's config key of the same meaning (jobqueue.<batch>.<key>), read under gpujobqueue's own.
    jobqueue_key: str | None
    # A text keyword that dask-jobqueue writes as given: a whole number (account=123456; YAML 1.1 reads an
    # unquoted 30:00 as 1800) is taken as its digits (taken()); number_warning(number) says what a warning says.
    numbers_as_text: bool
    number_warning: Callable[[int], str] | None

    def __new__(
        cls,
        name: str,
        kind: str = TEXT,
        parse: Callable[[str, Any], Any] | None = None,
        default: Any = None,
        doc: str = "",
        site_key: str | None = None,
        option: str | Sequence[str] | NoOption = (),
        *,
        type_doc: str | None = None,
        choices: Sequence[str] | Callable[[], Sequence[str]] = (),
        site_schema: dict[str, Any] | None = None,
        jobqueue_key: str | None = None,
        numbers_as_text: bool = False,
        number_warning: Callable[[int], str] | None = None,
    ) -> "Keyword":
        if parse is not None and not callable(parse):
            raise TypeError(f"keyword {name}: parse must be a parser, (field, value) -> value, not {parse!r}")
        keyword = super().__new__(cls, name)
        if not option:
            dashed = name.replace("_", "-")
            option = (f"--{dashed}/--no-{dashed}",) if kind == SWITCH else (f"--{dashed}",)
        keyword.kind, keyword.parse, keyword.default = kind, parse, default
        keyword.doc, keyword.site_key = doc or f"The {name} keyword.", site_key
        keyword.option = (
            option if isinstance(option, NoOption) else tuple([option] if isinstance(option, str) else option)
        )
        keyword.type_doc = type_doc or (
            "{" + ", ".join(f'"{c}"' for c in choices) + "}"
            if kind == CHOICE and choices and not callable(choices)
            else _TYPE_DOCS[kind]
        )
        keyword.choices, keyword.jobqueue_key = choices, jobqueue_key
        keyword.numbers_as_text, keyword.number_warning = numbers_as_text, number_warning
        keyword.site_schema = site_schema or (
            {"enum": list(choices)} if kind == CHOICE and not callable(choices) else _SCHEMAS.get(kind, {})
        )
        return keyword

    def taken(self, value: Any) -> Any:
        """``value`` as dask-jobqueue takes it: where :attr:`numbers_as_text`, a whole number (not a bool) is its
        digits, which dask-jobqueue writes into the script as they are."""
        if not self.numbers_as_text or not isinstance(value, int) or isinstance(value, bool):
            return value
        if abs(value) >= 10**18:
            raise ValidationError(str(self), f"{value} is a whole number of more than 18 digits; give {self} as text")
        if self.number_warning is not None:
            warnings.warn(f"{self}={value} is a number: {self.number_warning(value)}", UserWarning, stacklevel=2)
        return str(value)

    def with_facts(self, **changes: Any) -> "Keyword":
        """This keyword with some facts changed (``choices``: a ``choice``'s, as the batch systems registered give
        them)."""
        facts = {field: getattr(self, field) for field in _FIELDS}
        return Keyword(str(self), **{**facts, **changes})

    @property
    def options(self) -> tuple[str, ...]:
        """The option's click declarations; none for a keyword without one."""
        return () if isinstance(self.option, NoOption) else self.option

    @property
    def command_line(self) -> str | None:
        """Why the keyword has no option, or None where it has one."""
        return self.option.why if isinstance(self.option, NoOption) else None

    @property
    def summary(self) -> str:
        """The doc's first sentence."""
        match = _FIRST_SENTENCE.match(self.doc)
        return " ".join((match.group(1) if match else self.doc).split())

    @property
    def help(self) -> str:
        """``--help``'s line: the doc's first sentence (saying so where the option is repeatable)."""
        line = self.summary
        return line[:-1] + "; repeatable." if self.kind in (LIST, PAIRS) and line.endswith(".") else line

    @property
    def default_doc(self) -> str:
        """The default as the docstring says it."""
        if isinstance(self.default, Computed):
            return f"Default: {self.default.how}."
        if self.default is None:
            return "Default: not set."
        return f"Default ``{self.default!r}``."


_FIELDS = tuple(Keyword.__annotations__)  # the facts, in the order __new__ takes them


def read_declared(keywords: Iterable[Keyword], settings: Mapping[str, Any], within: str = "") -> dict[str, Any]:
    """Each keyword's value read alone, by its declaration and nothing else: its ``parse`` of the value given
    (a ValidationError names the keyword), else its default (None where the default is :class:`Computed`: the
    plan's rules work it out); a list or mapping that nothing gives is empty. The keywords of a mapping keyword
    (``cpu_pool``) are named ``within`` it (``cpu_pool.processes``)."""
    values = {}
    for keyword in keywords:
        value = settings.get(keyword)
        if value is None:
            value = None if isinstance(keyword.default, Computed) else keyword.default
        if keyword.parse is not None and (value is not None or keyword.kind in (LIST, PAIRS)):
            value = keyword.parse(f"{within}.{keyword}" if within else str(keyword), value)
        values[str(keyword)] = value
    return values
