"""The measuring programs in reference/ (ssm_selective_scan_floor.cu,
tf32_product_probe.cu, mamba3_sincos_probe.cu, the bounds drivers
mamba3_scan*_bounds.cu and the phase probes *_phases.cu): the command each
header and the notes give must build (their numbers are measured on a GPU;
this only keeps them buildable), the product probe's seven routines must
compute a matrix product (on emu, as sgemm_fp32 solutions), and the patches
of mamba3_scan_bounds.py must fit the references as they are, change them,
and build."""

from __future__ import annotations

import dataclasses
import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

from harness.build import nvcc
from harness.challenge import load_challenge
from harness.errors import ToolNotFound
from harness.evaluation import evaluate_files
from harness.plan import Plan

REPO = Path(__file__).resolve().parents[1]
# each program and its target: a new *_phases.cu is checked without being listed here
SM_90, SM_90A = "-arch=sm_90", "-gencode=arch=compute_90a,code=sm_90a"  # wgmma needs sm_90a alone
PROBES = {
    "ssm_selective_scan_floor.cu": SM_90,
    "tf32_product_probe.cu": SM_90A,
    "mamba3_sincos_probe.cu": SM_90,
    "mamba3_scan_bounds.cu": SM_90,
    "mamba3_scan_backward_bounds.cu": SM_90,
} | {p.name: SM_90 for p in sorted((REPO / "reference").glob("*_phases.cu"))}
PRODUCT_PROBE = REPO / "reference" / "tf32_product_probe.cu"
AS_SGEMM = REPO / "tests" / "emu_programs" / "tf32_probe_as_sgemm.cu"


@pytest.mark.parametrize("name", PROBES)
def test_probe_builds_without_warnings(tmp_path, name):
    try:
        compiler = nvcc.find_nvcc()
    except ToolNotFound as missing:
        pytest.skip(str(missing))
    source, target = REPO / "reference" / name, PROBES[name]
    assert f"nvcc -O3 {target} reference/{name}" in source.read_text()
    command = [str(compiler), "-O3", target, "-Werror", "all-warnings", str(source), "-o", str(tmp_path / "probe")]
    succeeded, log = nvcc.run_compiler(command, source)
    assert succeeded, log
    assert (tmp_path / "probe").is_file()


@pytest.mark.skipif(shutil.which("g++") is None, reason="the emu backend needs g++")
@pytest.mark.parametrize(
    "variant", ["fragments", "ldmatrix", "wgmma", "wgmma_a_regs", "wgmma_two_products", "f16x2", "f16x2_split_once"]
)
def test_product_probe_routine_passes_sgemm_on_emu(tmp_path, variant):
    # emu translates a solution's own text only, so the probe goes in whole, its lines kept for messages
    solution = tmp_path / f"tf32_probe_{variant}.cu"
    solution.write_text(
        f'#define TF32_PROBE_NO_MAIN\n#line 1 "{PRODUCT_PROBE}"\n{PRODUCT_PROBE.read_text()}\n'
        + AS_SGEMM.read_text().replace("PROBE_VARIANT", variant)
    )
    challenge = load_challenge("sgemm_fp32", REPO)
    (result,) = evaluate_files(challenge, [solution], Plan(backend="emu", time=False), REPO)
    assert result.passed, f"{result.reason}: {result.message}"
    assert len(result.tests) == len(challenge.tests_of("example", "functional"))


def bounds_script():
    spec = importlib.util.spec_from_file_location("mamba3_scan_bounds", REPO / "reference" / "mamba3_scan_bounds.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look themselves up there
    spec.loader.exec_module(module)
    return module


BOUNDS = bounds_script()


@pytest.mark.parametrize("subject", BOUNDS.SUBJECTS)
def test_bounds_patches_each_change_the_reference_where_they_say(subject):
    subject = BOUNDS.SUBJECTS[subject]
    reference = subject.reference.read_text()
    for name, patch in subject.patches.items():
        text = BOUNDS.patched(subject, (name,))
        for edit in patch.edits:
            assert edit.new in text and (edit.old in edit.new or edit.old not in text), name
        assert not patch.prelude or text.count(patch.prelude) == 1, name
    for name, patches in subject.variants.items():
        assert (BOUNDS.patched(subject, patches) != reference) == bool(patches), name


def test_bounds_patch_that_no_longer_fits_is_refused(tmp_path):
    changed = tmp_path / "mamba3_scan.cu"
    changed.write_text(BOUNDS.FORWARD.reference.read_text().replace("row_of(t) * npairs", "row_of(t) *npairs"))
    subject = dataclasses.replace(BOUNDS.FORWARD, reference=changed)
    with pytest.raises(ValueError, match="patch hot_theta: its text is in the reference 0 times, not 1"):
        BOUNDS.patched(subject, ("hot_theta",))


def variants_to_build(subject) -> list[str]:
    """The most patched variant, and for each patch with device code of its own (a prelude) the most
    patched variant that uses it: every prelude is built at least once, with the patches beside it."""
    def most_patched(names):
        return max(names, key=lambda n: len(subject.variants[n]))

    names = {most_patched(subject.variants)}
    for patch_name, patch in subject.patches.items():
        users = [n for n in subject.variants if patch_name in subject.variants[n]]
        if patch.prelude and users:
            names.add(most_patched(users))
    return sorted(names)


BOUNDS_BUILDS = [(subject, name) for subject in BOUNDS.SUBJECTS for name in variants_to_build(BOUNDS.SUBJECTS[subject])]


@pytest.mark.parametrize(("subject", "name"), BOUNDS_BUILDS)
def test_bounds_variant_builds_without_warnings(tmp_path, subject, name):
    try:
        compiler = nvcc.find_nvcc()
    except ToolNotFound as missing:
        pytest.skip(str(missing))
    subject = BOUNDS.SUBJECTS[subject]
    (tmp_path / subject.reference.name).write_text(BOUNDS.patched(subject, subject.variants[name]))
    shutil.copy(subject.driver, tmp_path)
    shutil.copy(BOUNDS.HELPERS, tmp_path)
    source = tmp_path / subject.driver.name
    arch = BOUNDS.target(subject, subject.variants[name])
    command = [str(compiler), "-O3", arch, "-Werror", "all-warnings", str(source), "-o", str(tmp_path / "bounds")]
    succeeded, log = nvcc.run_compiler(command, source)
    assert succeeded, log


def test_bounds_only_builds_and_times_that_variant_beside_base(monkeypatch, capsys):
    built, timed = [], []
    monkeypatch.setattr(BOUNDS, "build", lambda subject, name, folder: built.append(name) or Path(name))
    monkeypatch.setattr(BOUNDS, "timed", lambda binary, name: timed.append(name) or 100.0)
    monkeypatch.setattr(sys, "argv", ["mamba3_scan_bounds.py", "backward", "--only", "grad_no_wait", "--rounds", "2"])
    assert BOUNDS.main() == 0
    assert sorted(built) == ["base", "grad_no_wait"]
    assert timed == ["base", "grad_no_wait"] * 2
    out = capsys.readouterr().out
    assert "grad_no_wait" in out and "no_wait: no wait for the carry kernel" in out and "no_products" not in out


def test_bounds_only_names_the_variants_when_one_is_unknown(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["mamba3_scan_bounds.py", "forward", "--only", "in_blok"])
    with pytest.raises(SystemExit):
        BOUNDS.main()
    assert "no variant in_blok of forward; its variants: base, hot_theta" in capsys.readouterr().err
