"""Issue 40, point 6: a keyword's value is bounded in size before it is parsed, and the parse is linear.

``worker_extra_args`` of 1 MB took 170 s to parse (shlex builds each word a character at a time, a
new string each time) and was quoted whole in the error. Now every keyword's value (and every dask
config value the cluster reads) is refused past
:data:`~gpujobqueue.settings.limits.MAX_VALUE_CHARACTERS` characters, naming the keyword, before any parser
reads it, and the error quotes a short excerpt; the worker arguments are split in linear time.
"""

from __future__ import annotations

import shlex
import time

import dask
import pytest
from fixtures.sizes import with_job_size
from hypothesis import given, settings
from hypothesis import strategies as st

from gpujobqueue.errors import GPUJobQueueError, ValidationError
from gpujobqueue.plan.scripts import job_script_for
from gpujobqueue.settings.limits import MAX_LIST_ITEMS, MAX_VALUE_CHARACTERS
from gpujobqueue.settings.worker_args import split_words

MEGABYTE = 1 << 20
SHORT_MESSAGE = 400  # characters: the field, what is wrong, an excerpt


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "keyword, value",
    [
        ("worker_extra_args", ["--preload x " + "a " * (MEGABYTE // 2)]),
        ("worker_extra_args", ["--name '" + "a" * MEGABYTE + "'"]),
        ("worker_extra_args", "--name " + "a" * MEGABYTE),
        ("extra", ["--name " + "a" * MEGABYTE]),
        ("job_script_prologue", ["echo " + "a" * MEGABYTE]),
        ("job_extra_directives", ["--comment=" + "a" * MEGABYTE]),
        ("environment", {"A": "a" * MEGABYTE}),
        ("job_name", "a" * MEGABYTE),
    ],
    ids=["words", "quoted-word", "string", "extra", "prologue", "directive", "environment", "job_name"],
)
def test_a_megabyte_value_is_refused_by_name_at_once_with_a_short_message(keyword, value):
    started = time.monotonic()
    with pytest.raises(GPUJobQueueError) as info:
        job_script_for("slurm", with_job_size({keyword: value}), name="w")
    took = time.monotonic() - started
    assert info.value.field in (keyword, "worker_extra_args"), info.value
    assert len(str(info.value)) < SHORT_MESSAGE, str(info.value)[:1000]
    assert took < 5, f"{took:.1f} s"


@pytest.mark.timeout(60)
def test_a_megabyte_config_value_is_refused_naming_its_key():
    with dask.config.set({"jobqueue.slurm.worker-extra-args": ["--name " + "a" * MEGABYTE]}):
        with pytest.raises(GPUJobQueueError) as info:
            job_script_for("slurm", with_job_size({}), name="w")
    assert info.value.field == "jobqueue.slurm.worker-extra-args", info.value
    assert len(str(info.value)) < SHORT_MESSAGE


def test_worker_arguments_at_the_bound_split_in_linear_time():
    """One quoted word of the most characters a value may hold: shlex took 4.7 s on 04e8fe8 (54 s
    for 1 MB, and a render splits the words four times); the split now takes 6 ms (11 ms for 1 MB)."""
    word = "a" * (MAX_VALUE_CHARACTERS - 16)
    started = time.monotonic()
    assert split_words("worker_extra_args", ["--name '" + word + "'"]) == ["--name", word]
    assert time.monotonic() - started < 0.5


def test_more_words_than_a_list_holds_are_refused_naming_worker_extra_args():
    with pytest.raises(ValidationError) as info:
        split_words("worker_extra_args", ["-x " * (MAX_LIST_ITEMS + 1)])
    assert info.value.field == "worker_extra_args" and str(MAX_LIST_ITEMS) in info.value.message


TOO_MANY = MAX_LIST_ITEMS + 1
# Each keyword whose items the plan loops over, given one item more than gpujobqueue accepts.
TOO_MANY_ITEMS = {
    "job_extra_directives": ["--comment=x"] * TOO_MANY,
    "job_directives_skip": ["--x"] * TOO_MANY,
    "job_script_prologue": ["true"] * TOO_MANY,
    "job_script_epilogue": ["true"] * TOO_MANY,
    "environment": {f"V{i}": "1" for i in range(TOO_MANY)},
    "launcher_args": ["--cpu-bind=none"] * TOO_MANY,
    "worker_extra_args": ["--nthreads 1"] * (TOO_MANY // 2 + 1),  # two words each
    "extra": ["--resources " + ",".join(f"r{i}=1" for i in range(TOO_MANY))],
    "set_rmm_allocator_for_libs": "cupy," * TOO_MANY,
}
EXTRA = {"launcher_args": {"launcher": "srun"}, "set_rmm_allocator_for_libs": {"worker_mode": "dask-cuda"}}


@pytest.mark.parametrize("keyword", TOO_MANY_ITEMS)
def test_every_list_a_keyword_takes_is_bounded_and_refused_naming_it(keyword):
    with pytest.raises(GPUJobQueueError) as info:
        job_script_for("slurm", with_job_size({keyword: TOO_MANY_ITEMS[keyword], **EXTRA.get(keyword, {})}), name="w")
    assert info.value.field in (keyword, "worker_extra_args"), info.value
    assert str(MAX_LIST_ITEMS) in str(info.value) and len(str(info.value)) < SHORT_MESSAGE


def test_a_config_section_of_more_settings_than_any_holds_is_refused_naming_it():
    with dask.config.set({"jobqueue.slurm": {f"key-{i}": 1 for i in range(TOO_MANY)}}):
        with pytest.raises(GPUJobQueueError) as info:
            job_script_for("slurm", with_job_size({}), name="w")
    assert info.value.field == "jobqueue.slurm" and len(str(info.value)) < SHORT_MESSAGE


SHELL_TEXT = st.text(alphabet=st.sampled_from(list("ab -=\\'\"\t$")), max_size=40)


@settings(max_examples=2000, deadline=None)
@given(SHELL_TEXT)
def test_worker_arguments_are_split_as_shlex_splits_them(text):
    try:
        expected = shlex.split(text)
    except ValueError:
        with pytest.raises(ValidationError) as info:
            split_words("worker_extra_args", [text])
        assert info.value.field == "worker_extra_args"
        return
    assert split_words("worker_extra_args", [text]) == expected
