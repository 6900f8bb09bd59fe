"""``mbkron info`` prints every load type of a model file readably, values in the file's units."""

from __future__ import annotations

from mbkron import cli
from tests.test_osim_forces import LOADS_MODEL  # coordinate limits and a path spring

MODEL = LOADS_MODEL + """
[[loads]]
type = "spring_damper"
body_a = "ground"
point_a = [0, 1, 0]
body_b = "arm"
point_b = [0.3, 0, 0]
stiffness = 50
damping = 2
free_length = 0.5
[[loads]]
type = "line_force"
body_a = "cart"
point_a = [0, 0, 0]
body_b = "arm"
point_b = [0.3, 0, 0]
tension = 7.5
[[loads]]
type = "point_force"
body = "arm"
point = [0.3, 0, 0]
force = [0, -2, 0]
frame = "body"
[[loads]]
type = "body_torque"
body = "arm"
torque = [0, 0, 1.5]
[[loads]]
type = "joint_torque"
joint = "arm"
torque = "-5*a"
[[loads]]
type = "generalized_force"
coordinate = "s"
value = 3
"""

EXPECTED = [
    "  0: coordinate limit on a: upper 5 deg (stiffness 10 N·m/deg), lower -90 deg (stiffness 1 N·m/deg), "
    "transition 2 deg, damping 0.01 N·m·s/deg",
    "  1: coordinate limit on s: upper 0.1 m (stiffness 400 N/m), lower -0.05 m (stiffness 300 N/m), "
    "transition 0.02 m, damping 0 N·s/m",
    "  2: path spring band: ground (1.5, 0.2, 0) → cart (0, 0.1, 0) while a in [-30, 60] deg → arm (0.4, 0, 0); "
    "stiffness 300 N/m, resting length 1 m, dissipation 0.2 s/m",
    "  3: spring-damper ground (0, 1, 0) ↔ arm (0.3, 0, 0): k = 50 N/m, c = 2 N·s/m, free length 0.5 m",
    "  4: line force cart (0, 0, 0) ↔ arm (0.3, 0, 0): tension 7.5 N",
    "  5: point force on arm at (0.3, 0, 0) m: (0, -2, 0) N [body frame]",
    "  6: torque on arm: (0, 0, 1.5) N·m [ground frame]",
]


def test_info_prints_every_load_type_in_the_file_units(capsys, tmp_path):
    path = tmp_path / "limits.toml"
    path.write_text(MODEL)
    assert cli.main(["info", str(path)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    start = lines.index("loads (9)")
    assert lines[start + 1:start + 1 + len(EXPECTED)] == EXPECTED
    # the joint torque's formula (in the file's degrees) is printed as the SI expression it became
    assert lines[start + 8].startswith("  7: joint torque on the joint of arm: ") and "N·m or N" in lines[start + 8]
    assert lines[start + 9] == "  8: generalized force on s: 3 N"
    assert "Force(" not in out and "PathSpring(" not in out and "{" not in out


# ---------------------------------------------------------------------- issue 27, item 20: long credits
def model_block(out: str) -> list[str]:
    """The lines of `info`'s output before the `file` line (the model's name and description)."""
    lines = out.splitlines()
    return lines[:next(k for k, line in enumerate(lines) if line.startswith("file "))]


def test_info_wraps_and_elides_long_credits(capsys, tmp_path):
    import gzip
    import re
    from pathlib import Path

    text = gzip.decompress((Path(__file__).parent / "data" / "osim" / "leg6dof9musc.osim.gz").read_bytes()).decode()
    name = re.search(r'<Model name="([^"]*)"', text).group(1)
    credits = " ".join(re.search(r"<credits>(.*?)</credits>", text, re.S).group(1).split())
    assert len(credits) > 1000  # the case of the issue: kilobytes of one line
    path = tmp_path / "leg.osim"
    path.write_text(text)
    assert cli.main(["info", str(path)]) == 0
    block = model_block(capsys.readouterr().out)
    assert 2 <= len(block) <= 7 and all(len(line) <= 100 for line in block)
    assert block[0].startswith(f"model       {name} — OpenSim model {name}. Credits: ")
    shown = " ".join(line[12:] for line in block[:-1])
    whole = f"{name} — OpenSim model {name}. Credits: {credits}"
    assert whole.startswith(shown)
    elided = re.fullmatch(r" {12}… \(([0-9,]+) more characters\)", block[-1])
    assert elided is not None
    description = f"OpenSim model {name}. Credits: {credits}" + (
        ". Publications: " + " ".join(m.group(1).split()) if (m := re.search(r"<publications>(.*?)</publications>",
                                                                           text, re.S)) else "")
    assert int(elided.group(1).replace(",", "")) == len(f"{name} — {description}") - len(shown)


def test_info_keeps_a_short_description_on_one_line(capsys, tmp_path):
    path = tmp_path / "short.toml"
    assert MODEL.count("[model]\n") == 1 and "description" not in MODEL
    path.write_text(MODEL.replace("[model]\n", '[model]\ndescription = "a short one"\n'))
    assert cli.main(["info", str(path)]) == 0
    [line] = model_block(capsys.readouterr().out)
    assert line.startswith("model       ") and line.endswith(" — a short one")
