"""The challenge model: a folder of data plus a float64 reference.

challenges/<name>/ holds spec.md, challenge.toml (parameters, tolerance,
distributions, tests, cost model), reference.py (`reference` and
`generate_inputs`) and starter.cu. Everything the harness knows about a
challenge is read from there; nothing challenge-specific lives in harness/.
"""

from __future__ import annotations

import enum
import hashlib
import importlib.util
import re
import os
import sys
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from types import ModuleType
from typing import Any

from . import expressions
from .errors import ChallengeError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROLES = ("input", "output", "size")


@dataclass(frozen=True)
class DType:
    """An element type of solve()'s arrays: its C name (and the other spellings
    C accepts for it), its name in NumPy and CuPy, and the bit pattern that
    marks an output element the solution never wrote."""

    c_name: str
    array_name: str
    poison: int  # a quiet NaN no arithmetic produces (floats); a count no test reaches (ints)
    c_aliases: tuple[str, ...] = ()


# The one table of element types (the C signature, test data and the call buffers read it).
DTYPES = {
    "float32": DType("float", "float32", 0x7FC0FFEE),
    "int32": DType("int", "int32", 0x7FC0FFEE),
    "float16": DType("half", "float16", 0x7EEE, ("__half",)),  # cuda_fp16.h; canonical NaNs are 0x7E00 and 0x7FFF
}
TEST_KINDS = ("example", "functional", "performance")
TOPIC_PATTERN = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")  # lower-case words joined by hyphens: "shared-memory"


class Difficulty(str, enum.Enum):
    """How far into the practice ladder a challenge sits."""

    EASY = "easy"
    MEDIUM = "medium"
    HARD = "hard"


@dataclass(frozen=True)
class Param:
    """One parameter of solve(), in signature order."""

    name: str
    role: str
    dtype: str
    shape: tuple[str, ...] = ()
    axes: tuple[str, ...] = ()
    min: int | None = None
    max: int | None = None

    @property
    def c_type(self) -> str:
        """The C type solve() declares for this parameter."""
        base = DTYPES[self.dtype].c_name
        if self.role == "size":
            return base
        return f"const {base}*" if self.role == "input" else f"{base}*"


@dataclass(frozen=True)
class Tolerance:
    atol: float
    rtol: float


def _tolerances(table: dict[str, Any]) -> tuple[Tolerance, dict[str, Tolerance]]:
    """[tolerance] gives atol and rtol for every output; a sub-table named after
    an output ([tolerance.dA]) overrides either for that output alone."""
    default = Tolerance(float(table["atol"]), float(table["rtol"]))
    overrides = {
        name: Tolerance(float(entry.get("atol", default.atol)), float(entry.get("rtol", default.rtol)))
        for name, entry in table.items()
        if isinstance(entry, dict)
    }
    return default, overrides


@dataclass(frozen=True)
class TestCase:
    """A named set of sizes and inputs. Generated cases name a distribution and
    a seed; the example carries literal inputs and the expected outputs of the spec."""

    name: str
    kind: str
    sizes: dict[str, int]
    distribution: str | None = None
    seed: int | None = None
    zero: tuple[str, ...] = ()
    literal_inputs: dict[str, Any] | None = None
    literal_expected: dict[str, Any] | None = None
    expected_atol: float | None = None


@dataclass
class Challenge:
    name: str
    title: str
    summary: str
    root: Path
    params: tuple[Param, ...]
    constraints: tuple[str, ...]
    tolerance: Tolerance  # every output's, unless tolerance_overrides names it
    distributions: dict[str, str]
    cost: dict[str, str]
    tests: tuple[TestCase, ...]
    difficulty: Difficulty
    topics: tuple[str, ...]
    tolerance_overrides: dict[str, Tolerance] = field(default_factory=dict)
    hidden_seeds: bool = False  # the generated tests' seeds come from a grader's secret (with_secret_seeds)
    oracle_depends_on: tuple[str, ...] = ()  # challenges whose reference.py this one's oracle loads (a backward its forward)
    metadata: dict[str, Any] = field(repr=False, default_factory=dict)

    def tolerance_for(self, output: str) -> Tolerance:
        return self.tolerance_overrides.get(output, self.tolerance)

    @property
    def inputs(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.role == "input")

    @property
    def outputs(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.role == "output")

    @property
    def size_params(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.role == "size")

    @property
    def spec_path(self) -> Path:
        return self.root / "spec.md"

    @property
    def starter_path(self) -> Path:
        return self.root / "starter.cu"

    def tests_of(self, *kinds: str) -> tuple[TestCase, ...]:
        return tuple(t for t in self.tests if t.kind in kinds)

    def test(self, name: str) -> TestCase:
        for case in self.tests:
            if case.name == name:
                return case
        raise ChallengeError(f"{self.name} has no test named {name!r}")

    def shape(self, param: Param, sizes: dict[str, int]) -> tuple[int, ...]:
        return tuple(int(expressions.evaluate(dim, sizes)) for dim in param.shape)

    def cost_of(self, kind: str, sizes: dict[str, int]) -> float | None:
        """A cost model entry (bytes, transcendentals, flops) at these sizes, or None."""
        if kind not in self.cost:
            return None
        return float(expressions.evaluate(self.cost[kind], sizes))

    def signature(self) -> str:
        args = ", ".join(f"{p.c_type} {p.name}" for p in self.params)
        return f'extern "C" void solve({args})'

    @cached_property
    def content_hash(self) -> str:
        """Changes whenever the metadata or the reference changes, this challenge's
        or those its oracle loads: keys cached test data."""
        digest = hashlib.sha256()
        folders = (self.root, *(self.root.parent / name for name in self.oracle_depends_on))
        for folder in folders:
            for path in (folder / "challenge.toml", folder / "reference.py"):
                digest.update(path.read_bytes())
        return digest.hexdigest()[:16]

    @cached_property
    def reference_module(self) -> ModuleType:
        """reference.py, loaded by path: it is data of the challenge, not a package module."""
        path = self.root / "reference.py"
        spec = importlib.util.spec_from_file_location(f"harness_challenge_{self.name}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for function in ("reference", "generate_inputs"):
            if not callable(getattr(module, function, None)):
                raise ChallengeError(f"{path} must define {function}()")
        return module


# challenges/, reference/ and solutions/ as a wheel ships them (setup.py copies
# them there); absent in a checkout and in an editable install.
PACKAGED_DATA = Path(__file__).resolve().parent / "_data"
# The checkout an editable install (`make install`) imports this package from.
SOURCE_CHECKOUT = Path(__file__).resolve().parents[1]


def repository_root() -> Path:
    """Where challenges/, solutions/ and reference/ live, the first of:
    $HARNESS_ROOT (an explicit choice); the nearest folder at or above the
    working directory that has challenges/ (a checkout you work in, so your
    edits count); the copy shipped in an installed package; the checkout an
    editable install runs from."""
    if os.environ.get("HARNESS_ROOT"):
        root = Path(os.environ["HARNESS_ROOT"]).resolve()
        if not (root / "challenges").is_dir():
            raise ChallengeError(f"HARNESS_ROOT={os.environ['HARNESS_ROOT']} has no challenges/ folder")
        return root
    here = Path.cwd().resolve()
    for folder in (here, *here.parents):
        if (folder / "challenges").is_dir():
            return folder
    for root in (PACKAGED_DATA, SOURCE_CHECKOUT):
        if (root / "challenges").is_dir():
            return root
    raise ChallengeError(
        f"no challenges/ folder at or above {here}, nor in the installed package "
        f"{PACKAGED_DATA.parent}: set HARNESS_ROOT to a checkout of harness"
    )


def challenge_names(root: Path | None = None) -> list[str]:
    base = (root or repository_root()) / "challenges"
    if not base.is_dir():
        return []
    return sorted(p.name for p in base.iterdir() if (p / "challenge.toml").is_file())


SECRET_SEEDS_ENV = "HARNESS_SECRET_SEEDS"


def with_secret_seeds(challenge: Challenge, secret: str) -> Challenge:
    """The challenge with every generated test's seed replaced by one derived
    from a grader's secret and the test's name: the same sizes and
    distributions on data nobody could tune a solution for. The example keeps
    its literal inputs."""
    if not secret:
        raise ChallengeError("the secret for hidden seeds is empty")

    def derived(case: TestCase) -> TestCase:
        if case.seed is None:
            return case
        digest = hashlib.sha256(f"{secret}\0{challenge.name}\0{case.name}".encode()).digest()
        return replace(case, seed=int.from_bytes(digest[:8], "little"))

    return replace(challenge, tests=tuple(map(derived, challenge.tests)), hidden_seeds=True)


def select_challenges(
    challenges: list[Challenge], difficulty: Difficulty | None = None, topic: str | None = None
) -> list[Challenge]:
    """Those of the given difficulty and topic (None: any), easiest first, then by name."""
    order = list(Difficulty)
    chosen = [
        c for c in challenges if (difficulty is None or c.difficulty is difficulty) and (topic is None or topic in c.topics)
    ]
    return sorted(chosen, key=lambda c: (order.index(c.difficulty), c.name))


def load_challenge(name: str, root: Path | None = None) -> Challenge:
    folder = (root or repository_root()) / "challenges" / name
    if not (folder / "challenge.toml").is_file():
        known = ", ".join(challenge_names(root)) or "none"
        raise ChallengeError(f"no challenge named {name!r} (known: {known})")
    try:
        metadata = tomllib.loads((folder / "challenge.toml").read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ChallengeError(f"{folder / 'challenge.toml'}: {exc}") from None
    challenge = _from_metadata(metadata, folder)
    _check_consistency(challenge)
    return challenge


def _from_metadata(meta: dict[str, Any], folder: Path) -> Challenge:
    try:
        params = tuple(
            Param(
                name=p["name"],
                role=p["role"],
                dtype=p["dtype"],
                shape=tuple(p.get("shape", ())),
                axes=tuple(p.get("axes", ())),
                min=p.get("min"),
                max=p.get("max"),
            )
            for p in meta["params"]
        )
        tests_meta = meta["tests"]
        tests: list[TestCase] = []
        if "example" in tests_meta:
            ex = tests_meta["example"]
            tests.append(
                TestCase(
                    name=ex.get("name", "example"),
                    kind="example",
                    sizes=dict(ex["sizes"]),
                    literal_inputs=dict(ex["inputs"]),
                    literal_expected=dict(ex.get("expected", {})),
                    expected_atol=ex.get("expected_atol"),
                )
            )
        for kind in ("functional", "performance"):
            entries = tests_meta.get(kind, [])
            for entry in entries if isinstance(entries, list) else [entries]:
                tests.append(
                    TestCase(
                        name=entry["name"],
                        kind=kind,
                        sizes=dict(entry["sizes"]),
                        distribution=entry["distribution"],
                        seed=int(entry["seed"]),
                        zero=tuple(entry.get("zero", ())),
                    )
                )
        tolerance, tolerance_overrides = _tolerances(meta["tolerance"])
        try:
            difficulty = Difficulty(meta["difficulty"])
        except ValueError:
            raise ChallengeError(
                f"{folder / 'challenge.toml'}: difficulty must be one of {[d.value for d in Difficulty]}"
            ) from None
        return Challenge(
            name=meta["name"],
            title=meta.get("title", meta["name"]),
            summary=meta.get("summary", ""),
            root=folder,
            params=params,
            constraints=tuple(meta.get("constraints", ())),
            tolerance=tolerance,
            tolerance_overrides=tolerance_overrides,
            difficulty=difficulty,
            topics=tuple(meta["topics"]),
            oracle_depends_on=tuple(meta.get("oracle_depends_on", ())),
            distributions=dict(meta.get("distributions", {})),
            cost=dict(meta.get("cost", {})),
            tests=tuple(tests),
            metadata=meta,
        )
    except KeyError as exc:
        raise ChallengeError(f"{folder / 'challenge.toml'}: missing key {exc}") from None


def _check_consistency(ch: Challenge) -> None:
    """Reject metadata the harness would otherwise trip over later, with the reason."""
    where = ch.root / "challenge.toml"
    size_names = {p.name for p in ch.size_params}
    names = [p.name for p in ch.params]
    if len(set(names)) != len(names):
        raise ChallengeError(f"{where}: duplicate parameter names")
    if ch.name != ch.root.name:
        raise ChallengeError(f"{where}: name {ch.name!r} differs from its folder {ch.root.name!r}")
    for p in ch.params:
        if p.role not in ROLES:
            raise ChallengeError(f"{where}: {p.name}: role must be one of {ROLES}")
        if p.dtype not in DTYPES:
            raise ChallengeError(f"{where}: {p.name}: dtype must be one of {tuple(DTYPES)}")
        if p.role != "size" and not p.shape:
            raise ChallengeError(f"{where}: array parameter {p.name} has no shape")
        if p.axes and len(p.axes) != len(p.shape):
            raise ChallengeError(f"{where}: {p.name}: axes and shape differ in length")
        for dim in p.shape:
            unknown = expressions.names_in(dim) - size_names
            if unknown:
                raise ChallengeError(f"{where}: {p.name}: shape uses unknown sizes {sorted(unknown)}")
    if not ch.outputs:
        raise ChallengeError(f"{where}: no output parameter")
    for name in ch.oracle_depends_on:
        if not (ch.root.parent / name / "reference.py").is_file():
            raise ChallengeError(f"{where}: oracle_depends_on names {name!r}, which has no reference.py beside this challenge")
    unknown_outputs = set(ch.tolerance_overrides) - {p.name for p in ch.outputs}
    if unknown_outputs:
        raise ChallengeError(f"{where}: tolerance sub-tables name non-outputs {sorted(unknown_outputs)}")
    if not ch.topics or not all(isinstance(t, str) and TOPIC_PATTERN.fullmatch(t) for t in ch.topics):
        raise ChallengeError(f"{where}: topics must be a non-empty list of lower-case hyphenated words")
    for kind, expression in ch.cost.items():
        if expressions.names_in(expression) - size_names:
            raise ChallengeError(f"{where}: cost.{kind} uses names that are not sizes")
    test_names = [t.name for t in ch.tests]
    if len(set(test_names)) != len(test_names):
        raise ChallengeError(f"{where}: duplicate test names")
    input_names = {p.name for p in ch.inputs}
    for case in ch.tests:
        if set(case.sizes) != size_names:
            raise ChallengeError(f"{where}: test {case.name}: sizes must name exactly {sorted(size_names)}")
        for p in ch.size_params:
            value = case.sizes[p.name]
            if (p.min is not None and value < p.min) or (p.max is not None and value > p.max):
                raise ChallengeError(f"{where}: test {case.name}: {p.name}={value} outside [{p.min}, {p.max}]")
        if case.distribution is not None and case.distribution not in ch.distributions:
            raise ChallengeError(f"{where}: test {case.name}: unknown distribution {case.distribution!r}")
        if set(case.zero) - input_names:
            raise ChallengeError(f"{where}: test {case.name}: zero names non-inputs")
        if case.kind == "example" and set(case.literal_inputs or {}) != input_names:
            raise ChallengeError(f"{where}: the example must give every input: {sorted(input_names)}")
    for constraint in ch.constraints:
        unknown = expressions.names_in(constraint) - size_names - input_names
        if unknown:
            raise ChallengeError(f"{where}: constraint {constraint!r} uses unknown names {sorted(unknown)}")
        if expressions.names_in(constraint) <= size_names:  # about sizes alone: checkable now
            for case in ch.tests:
                if not bool(expressions.evaluate(constraint, case.sizes)):
                    raise ChallengeError(f"{where}: test {case.name} violates {constraint!r}")
    if not ch.tests_of("performance"):
        raise ChallengeError(f"{where}: no performance test")
