"""What ``--help`` (and README's and docs' flag tables) say a flag defaults to is what the parser, or the code
that fills a flag left out, actually uses; every command that trains takes ``--threads`` and ``--workers``; the
graph commands do not offer ``--cluster`` in their help (and still refuse it)."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest
from cli_run import run

from parvec.cli import build_parser

REPO = Path(__file__).resolve().parents[2]
TRAINING_COMMANDS = ("train", "demo", "node2vec", "deepwalk", "link-eval")


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _help(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    """The action's help as ``--help`` prints it (``%(default)s`` expanded), on one line."""
    return " ".join(parser._get_formatter()._expand_help(action).split())


def _effective_defaults() -> dict[tuple[str, str], object]:
    """Defaults that are not the parser's own value: a flag left out is filled in later by the code."""
    from parvec.cli.train_flags import STYLE_DEFAULTS
    from parvec.config import default_threads
    from parvec.distributed.cluster import Cluster
    from parvec.distributed.sharded_settings import UPDATE_CAP
    from parvec.graph.evaluation import DEFAULT_FRACTIONS

    style = STYLE_DEFAULTS["parvec"]  # `parvec train INPUT` (resolve_defaults)
    cluster = Cluster("local:2", mode="sharded")
    out: dict[tuple[str, str], object] = {("train", k): style[k]
                                          for k in ("dim", "window", "negative", "sample", "epochs", "min_count")}
    out |= {("train", "debug"): 2, ("train", "hs"): style["hs"], ("train", "cbow"): style["cbow"],
            ("train", "negatives_per"): cluster.negatives_per,
            ("train", "wire_floats"): cluster.wire_floats, ("train", "shard_calls"): cluster.shard_calls,
            ("train", "update_cap"): UPDATE_CAP,  # ShardedSettings.of: a cluster's None is UPDATE_CAP
            ("node-eval", "train_fractions"): _abbreviated(DEFAULT_FRACTIONS)}
    for command in TRAINING_COMMANDS:
        out[(command, "threads")] = default_threads()
    return out


def _abbreviated(series) -> str:
    """An evenly spaced series as a help writes it: ``0.1,0.2,...,0.9``."""
    step = series[1] - series[0]
    assert all(abs(b - a - step) < 1e-12 for a, b in zip(series, series[1:], strict=False))
    return f"{series[0]:g},{series[1]:g},...,{series[-1]:g}"


_NUMBER = r"[-+]?\d[\d.]*(?:e-?\d+)?"


def documented_defaults(text: str, action: argparse.Action) -> list[str]:
    """The values a help text states as the default: ``(100)``, ``(5; ...)``, ``(default 80)``, ``(default: 10)``,
    ``(default: all cores, 2 here ...)``, a choice followed by ``(default`` or ``, the default``, ``(linear; ...)``.

    Example:
        >>> documented_defaults("vector dimension (100)", argparse.Action(["--dim"], "dim"))
        ['100']
    """
    found = re.findall(rf"\(({_NUMBER})(?=[;)]| =)", text)  # "(100)", "(5; ...)", "(0 = ...)"
    found += re.findall(rf"\(default:?\s*({_NUMBER})(?=[;):]|,(?!\d)| =)", text)  # "(default 80)", "(default: 10)"
    found += re.findall(r"all cores, (\d+) here", text)
    found += re.findall(r"\(default:? ([0-9][\d.]*(?:,[\d.]+)*,\.\.\.,[\d.]+)\)", text)  # 0.1,0.2,...,0.9
    words = [str(c) for c in (action.choices or ())]
    if isinstance(action.default, str) and action.default not in words:
        words.append(action.default)
    for word in words:
        w = re.escape(word)
        if re.search(rf"(?:^|[\s(]){w} \(default\b|(?:^|[\s(]){w}, the default\b|\({w};|\(default:? {w}\b", text):
            found.append(word)
    if re.search(r"\(default\)", text) and not words and action.nargs == 0:
        found.append("<this flag>")  # "--undirected ... (default)", "--sync-overlap ... (default)"
    return found


def _same(documented: str, actual: object, action: argparse.Action) -> bool:
    if documented == "<this flag>":  # the value this flag sets is the default ("--undirected ... (default)")
        sets = True if isinstance(action, argparse.BooleanOptionalAction) else action.const
        return sets == actual
    if isinstance(actual, bool) or actual is None:
        return False
    if isinstance(actual, (int, float)):
        try:
            return float(documented) == float(actual)
        except ValueError:
            return False
    return documented == str(actual)


def _all_actions():
    for command, parser in _commands().items():
        for action in parser._actions:
            if action.help in (None, argparse.SUPPRESS) or action.dest == "help":
                continue
            yield command, parser, action


def test_every_default_a_help_text_states_is_the_one_used():
    effective = _effective_defaults()
    wrong, checked = [], 0
    for command, parser, action in _all_actions():
        text = _help(parser, action)
        actual = effective.get((command, action.dest), parser.get_default(action.dest))
        for documented in documented_defaults(text, action):
            checked += 1
            if not _same(documented, actual, action):
                wrong.append(f"{command} {action.option_strings or action.dest}: the help says {documented!r}, the "
                             f"default is {actual!r}: {text}")
    assert not wrong, "\n".join(wrong)
    assert checked > 60  # the patterns above find the defaults (they would pass vacuously otherwise)


def test_every_flag_with_a_default_states_it():
    # A flag whose default is a value (not "off", not "none given") says it in its help.
    effective = _effective_defaults()
    silent = []
    for command, parser, action in _all_actions():
        actual = effective.get((command, action.dest), parser.get_default(action.dest))
        if actual is None or actual is False or not action.option_strings or action.nargs == 0 and not isinstance(
                action, argparse.BooleanOptionalAction):
            continue
        text = _help(parser, action)
        if not documented_defaults(text, action) and "default" not in text:
            silent.append(f"{command} {action.option_strings[0]} (default {actual!r}): {text}")
    assert not silent, "\n".join(silent)


def test_the_minibatch_words_help_states_the_sharded_drivers_defaults():
    from parvec.cli.train import CBOW_DEFAULT_BATCH, SHARDED_DEFAULTS
    from parvec.config import TrainConfig
    from parvec.distributed import sharded_settings as settings
    from parvec.distributed.cluster import Cluster
    from parvec.kernels.cbow_batch import DEFAULT_BATCH

    assert SHARDED_DEFAULTS == {
        "fused_minibatch_words": settings.FUSED_MINIBATCH_WORDS,
        "in_flight_heavy": settings.IN_FLIGHT_WORDS["interleaved"],
        "in_flight_light": settings.IN_FLIGHT_WORDS["interleaved, light subsampling"],
        "in_flight_contiguous": settings.IN_FLIGHT_WORDS["contiguous"],
        "light_subsampling": settings.LIGHT_SUBSAMPLING, "min_minibatch_words": settings.MIN_MINIBATCH_WORDS}
    assert CBOW_DEFAULT_BATCH == DEFAULT_BATCH
    parser = _commands()["train"]
    action = next(a for a in parser._actions if a.dest == "minibatch_words")
    text = _help(parser, action)
    # What the default sharded run uses (one shard on local:N, fused calls) comes first.
    default_run = settings.resolve(Cluster("local:2", mode="sharded"), TrainConfig())
    assert default_run.minibatch_words == settings.FUSED_MINIBATCH_WORDS
    assert text.startswith(f"sharded mode: input words per minibatch, one shard call each (default: "
                           f"{default_run.minibatch_words} with one shard and fused calls"), text
    split = settings.resolve(Cluster("local:2", mode="sharded", shard_calls="split"), TrainConfig())
    in_flight = split.minibatch_words * split.clients * split.threads
    assert in_flight == settings.IN_FLIGHT_WORDS["interleaved, light subsampling"]
    assert f"{in_flight} with more (the default 1e-3) or none, i.e. that / (clients x threads)" in text


def test_the_evaluation_help_names_the_sets_shipped_with_parvec():
    from parvec.evaluation import EVAL_FILES, shipped_eval_dir

    shipped = {p.name.removesuffix(".xz") for p in shipped_eval_dir().iterdir()}
    assert set(EVAL_FILES.values()) <= shipped
    commands = _commands()
    assert "evaluation sets shipped with parvec are used" in " ".join(commands["eval"].description.split())
    train = commands["train"]
    action = next(a for a in train._actions if a.dest == "eval_every_epoch")
    assert "the sets shipped with parvec" in _help(train, action)


def test_readme_and_docs_flag_tables_state_the_defaults_the_code_uses():
    # A table row naming a parvec flag and "(default X)" for it.
    from parvec.cli.train import CBOW_DEFAULT_BATCH

    flags = {}
    for command, _parser, action in _all_actions():
        for opt in action.option_strings:
            flags.setdefault(opt, (command, action))
    also = {"--batch-size": {CBOW_DEFAULT_BATCH}}  # the README's CBOW table: CBOW hogbatch's batch
    effective = _effective_defaults()
    rows = 0
    for doc in [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]:
        for n, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            if not line.startswith("|"):
                continue
            for flag, value in re.findall(r"`(--[a-z-]+)` \(default:? ([^)\s,;]+)", line):
                if flag not in flags:
                    continue
                rows += 1
                command, action = flags[flag]
                actual = effective.get((command, action.dest), _commands()[command].get_default(action.dest))
                allowed = {actual} | also.get(flag, set())
                assert any(_same(value, a, action) for a in allowed), \
                    f"{doc.name}:{n}: {flag} (default {value}) but parvec's default is {actual!r}"
    assert rows >= 1


# ---------------------------------------------------------------------- --threads / --workers everywhere
@pytest.mark.parametrize("command", TRAINING_COMMANDS)
def test_every_command_that_trains_takes_threads_and_workers_alike(command):
    parser = _commands()[command]
    action = next(a for a in parser._actions if a.dest == "threads")
    assert {"--threads", "--workers"} <= set(action.option_strings)
    train = _commands()["train"]
    reference = next(a for a in train._actions if a.dest == "threads")
    assert action.type is reference.type and action.default == reference.default
    assert _help(train, reference).startswith(_help(parser, action).rstrip(")"))  # train adds a sharded note


@pytest.mark.parametrize("flag", ["--threads", "--workers"])
def test_node2vec_trains_with_threads_given_either_way(flag, tmp_path, capsys, shared_data):
    graph = shared_data / "graphs" / "karate" / "karate.edgelist"
    code, _, err = run(["node2vec", graph, "-o", tmp_path / "k.emb", flag, 1, "--dimensions", 8, "--walk-length", 10,
                        "--num-walks", 2, "--quiet", "--report", tmp_path / "r.json"], capsys)
    assert code == 0, err
    assert json.loads((tmp_path / "r.json").read_text())["parameters"]["threads"] == 1


@pytest.mark.parametrize("command", ["node2vec", "deepwalk", "link-eval"])
def test_graph_help_does_not_offer_cluster_but_the_flag_is_still_refused(command, tmp_path, capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args([command, "--help"])
    assert "--cluster" not in capsys.readouterr().out
    edges = tmp_path / "g.edgelist"
    edges.write_text("a b\nb c\nc a\n")
    argv = [command, edges] + (["-o", tmp_path / "g.emb"] if command != "link-eval" else []) + ["--cluster", "local:2"]
    code, _, err = run(argv, capsys)
    assert code == 2 and "is not available on a cluster's replicas" in err
