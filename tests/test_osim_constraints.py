"""The OpenSim importer on contact-model files (element names with ``::``) and loop-closing
constraints (``PointConstraint``, ``WeldConstraint`` → ``[[constraints]]`` loop closures)."""

from __future__ import annotations

import re

import pytest

import mbkron
from mbkron.core.errors import ModelError

_CONTACT_MODEL = """<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000">
  <Model name="block">
    <!-- a comment mentioning SimTK::Transform -->
    <Ground name="ground"><FrameGeometry name="frame_geometry"/></Ground>
    <gravity>0 -9.80665 0</gravity>
    <BodySet><objects>
      <Body name="block"><mass>2</mass><mass_center>0 0 0</mass_center><inertia>1 1 1 0 0 0</inertia></Body>
    </objects></BodySet>
    <JointSet><objects>
      <SliderJoint name="slide">
        <socket_parent_frame>ground_offset</socket_parent_frame>
        <socket_child_frame>block_offset</socket_child_frame>
        <coordinates><Coordinate name="y"><default_value>0.5</default_value><range>-1 1</range></Coordinate></coordinates>
        <frames>
          <PhysicalOffsetFrame name="ground_offset"><socket_parent>/ground</socket_parent><orientation>0 0 1.5707963267948966</orientation></PhysicalOffsetFrame>
          <PhysicalOffsetFrame name="block_offset"><socket_parent>/bodyset/block</socket_parent><orientation>0 0 1.5707963267948966</orientation></PhysicalOffsetFrame>
        </frames>
      </SliderJoint>
    </objects></JointSet>
    <ForceSet><objects>
      <HuntCrossleyForce name="contact">
        <HuntCrossleyForce::ContactParametersSet name="contact_parameters"><objects>
          <HuntCrossleyForce::ContactParameters><geometry>floor corner</geometry><stiffness>1e7</stiffness>
          </HuntCrossleyForce::ContactParameters>
        </objects></HuntCrossleyForce::ContactParametersSet>
      </HuntCrossleyForce>
      <CoordinateActuator name="push"><coordinate>y</coordinate></CoordinateActuator>
    </objects></ForceSet>
  </Model>
</OpenSimDocument>
"""


# ---------------------------------------------------------------------- element names with `::`
def test_element_names_with_double_colons_are_read_and_contact_forces_reported(tmp_path):
    """OpenSim's contact forces have children named ``HuntCrossleyForce::ContactParametersSet``: not
    namespace-well-formed, but well-formed XML 1.0. The file is read, and the contact force (which
    changes the dynamics) is named as unsupported in the one ModelError, not dropped."""
    path = tmp_path / "block.osim"
    path.write_text(_CONTACT_MODEL)
    with pytest.raises(ModelError) as raised:
        mbkron.load_model(path)
    message = str(raised.value)
    assert "not well-formed" not in message
    assert ("/OpenSimDocument/Model[@name='block']/ForceSet/objects/HuntCrossleyForce[@name='contact']: "
            "<HuntCrossleyForce> is not supported") in message
    assert message.count("is not supported") == 1  # the actuator driven by controls is not (test_osim_import)


def test_double_colon_elements_keep_their_names_in_paths(tmp_path):
    """An unknown ``::`` element where the importer checks children is named as written."""
    text = _CONTACT_MODEL.replace("<mass>2</mass>", "<mass>2</mass><A::B>1</A::B>")
    path = tmp_path / "block.osim"
    path.write_text(text)
    with pytest.raises(ModelError, match=re.escape("Body[@name='block']/A::B: <A::B> is not supported")):
        mbkron.load_model(path)


def test_the_contact_model_without_its_contact_force_imports(tmp_path):
    start, end = _CONTACT_MODEL.index("<HuntCrossleyForce "), _CONTACT_MODEL.index("<CoordinateActuator")
    path = tmp_path / "block.osim"
    path.write_text(_CONTACT_MODEL[:start] + _CONTACT_MODEL[end:])
    model = mbkron.load_model(path)
    assert [c.name for c in model.coordinate_records] == ["y"]
