"""OpenSim ``ExternalLoads`` files (``.xml``): the ground reactions and other measured loads of a trial.

The layout, as OpenSim 4 writes and reads it (``ExternalLoads``, ``ExternalForce``)::

    <OpenSimDocument Version="...">
      <ExternalLoads name="...">
        <objects>
          <ExternalForce name="right">
            <applied_to_body>calcn_r</applied_to_body>
            <force_expressed_in_body>ground</force_expressed_in_body>
            <point_expressed_in_body>ground</point_expressed_in_body>
            <force_identifier>ground_force_v</force_identifier>    <!-- columns ground_force_vx, _vy, _vz -->
            <point_identifier>ground_force_p</point_identifier>
            <torque_identifier>ground_torque_</torque_identifier>
            <data_source_name>Unassigned</data_source_name>
          </ExternalForce>
        </objects>
        <groups/>
        <datafile>subject01_walk1_grf.mot</datafile>
        <external_loads_model_kinematics_file/>            <!-- ignored by OpenSim 4 (a warning) -->
        <lowpass_cutoff_frequency_for_load_kinematics>-1</lowpass_cutoff_frequency_for_load_kinematics>
      </ExternalLoads>
    </OpenSimDocument>

An identifier selects the data file's columns whose labels *start with* it (``Storage::
getColumnIndicesForIdentifier``), which must be exactly three (x, y, z in file order). An identifier
that is absent, blank or ``Unassigned`` means no force, point or torque: without a point the force acts
at the body's origin; a force needs a force or a torque, and a point needs a force. A force marked
``<isDisabled>true</isDisabled>`` or ``<appliesForce>false</appliesForce>`` is skipped. The ``datafile``
(relative to the XML file's directory) overrides every force's ``data_source_name``, as in OpenSim.

The file is untrusted input: it is parsed by the ``.osim`` importer's safe parser
(:func:`mbkron.io.osim.xml.parse_osim_bytes`: bounded size, no DTD or entities) and every problem is
reported at once, with its XML path, in one :class:`ExternalLoadsError`.
"""

from __future__ import annotations

import warnings
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from mbkron.core.errors import ModelError, ModelWarning
from mbkron.io.osim.xml import XmlReader, parse_osim_bytes, read_osim_bytes

__all__ = ["ExternalForceSpec", "ExternalLoadsError", "ExternalLoadsSpec", "read_external_loads"]

_FORCE_FIELDS = ("applied_to_body", "force_expressed_in_body", "point_expressed_in_body", "force_identifier",
                 "point_identifier", "torque_identifier", "data_source_name")
_FORCE_OTHER = ("isDisabled", "appliesForce")
_LOADS_FIELDS = ("objects", "groups", "datafile", "external_loads_model_kinematics_file",
                 "lowpass_cutoff_frequency_for_load_kinematics")


class ExternalLoadsError(ModelError):
    """An ExternalLoads file that cannot be used: ``problems`` lists every problem with its XML path."""

    def __init__(self, problems, source: str | None = None, unreadable: bool = False):
        super().__init__(problems, source, unreadable)
        where = f" in {source}" if source else ""
        if unreadable:
            message = f"cannot read the external loads file {source}: {self.problems[0]}"
        elif len(self.problems) == 1:
            message = f"invalid external loads{where}: {self.problems[0]}"
        else:
            message = f"invalid external loads{where}: {len(self.problems)} problems\n" + "\n".join(
                f"  - {p}" for p in self.problems)
        self.args = (message,)

    def __str__(self) -> str:
        return self.args[0]


@dataclass(frozen=True)
class ExternalForceSpec:
    """One ``<ExternalForce>``: which columns of the data file act on which body, expressed how.

    Attributes
    ----------
    name : str
    applied_to_body : str
    force_expressed_in_body, point_expressed_in_body : str
        Body names or ``"ground"``; the torque is expressed like the force.
    force_identifier, point_identifier, torque_identifier : str or None
        Column-label prefixes; None: not applied (no point: the body's origin).
    data_source_name : str or None
    """

    name: str
    applied_to_body: str
    force_expressed_in_body: str = "ground"
    point_expressed_in_body: str = "ground"
    force_identifier: str | None = None
    point_identifier: str | None = None
    torque_identifier: str | None = None
    data_source_name: str | None = None


@dataclass(frozen=True)
class ExternalLoadsSpec:
    """An ``<ExternalLoads>`` file.

    Attributes
    ----------
    name : str
    forces : tuple of ExternalForceSpec
        The enabled forces, in file order.
    datafile : Path or None
        The data file, resolved against the XML file's directory.
    model_kinematics_file : str or None
        ``external_loads_model_kinematics_file``: not supported by OpenSim 4 (which warns and ignores
        it); ignored here too, with a :class:`~mbkron.core.errors.ModelWarning`.
    lowpass_cutoff_for_load_kinematics : float or None
        Hz; used only with the kinematics file, so ignored likewise.
    source : str
    """

    name: str
    forces: tuple[ExternalForceSpec, ...]
    datafile: Path | None
    model_kinematics_file: str | None = None
    lowpass_cutoff_for_load_kinematics: float | None = None
    source: str = ""


def _identifier(text: str | None) -> str | None:
    """OpenSim's ``appliesForce``/``specifiesPoint``/``appliesTorque``: blank or ``Unassigned`` is none."""
    return None if text is None or not text.strip(" \t") or text == "Unassigned" else text


def read_external_loads(path: str | Path) -> ExternalLoadsSpec:
    """Read an OpenSim ExternalLoads file (see the module docstring).

    Raises
    ------
    ExternalLoadsError
        The file cannot be read, is not a safe well-formed OpenSim document with one ``<ExternalLoads>``,
        or has problems (all listed, with XML paths): unknown elements, a force without body, force or
        torque, a point without a force, no data file.
    """
    source = str(path)
    try:
        root = parse_osim_bytes(read_osim_bytes(path, source), source)
    except ModelError as error:
        raise ExternalLoadsError(error.problems, source, str(error).startswith("cannot read")) from None
    reader = XmlReader(root, source)
    loads = root.find("ExternalLoads")
    if loads is None:
        raise ExternalLoadsError([f"/{root.tag}: expected an <ExternalLoads> element (an OpenSim external loads "
                                  "file)"], source)
    reader.known_children(loads, _LOADS_FIELDS)
    forces = tuple(spec for spec in (_read_force(reader, element) for element in _force_elements(reader, loads))
                   if spec is not None)
    datafile = reader.text(loads, "datafile", "")
    if not datafile or datafile == "Unassigned":
        reader.problem(loads, "missing the data file (a .mot/.sto with the forces' columns)", "datafile")
    kinematics = reader.text(loads, "external_loads_model_kinematics_file", "") or None
    cutoff = reader.number(loads, "lowpass_cutoff_frequency_for_load_kinematics", -1.0)
    if not forces and not reader.problems:
        reader.problem(loads, "no enabled <ExternalForce>", "objects")
    if reader.problems or reader.unsupported:
        raise ExternalLoadsError(reader.unsupported + reader.problems, source)
    if kinematics:
        warnings.warn(f"{source}: external_loads_model_kinematics_file `{kinematics}` is ignored (OpenSim 4 no "
                      "longer supports it: points expressed in ground are applied at the body point at that "
                      "place at each frame)", ModelWarning, stacklevel=2)
    return ExternalLoadsSpec(loads.get("name", ""), forces, Path(path).parent / datafile, kinematics,
                             None if cutoff is None or cutoff < 0 else cutoff, source)


def _force_elements(reader: XmlReader, loads: ET.Element) -> list[ET.Element]:
    objects = loads.find("objects")
    if objects is None:
        reader.problem(loads, "missing <objects> (the <ExternalForce> elements)")
        return []
    elements = []
    for element in objects:
        if element.tag == "ExternalForce":
            elements.append(element)
        else:
            reader.unsupported_element(element, "<ExternalForce> inside <objects>")
    return elements


def _read_force(reader: XmlReader, element: ET.Element) -> ExternalForceSpec | None:
    reader.known_children(element, _FORCE_FIELDS + _FORCE_OTHER)
    name = reader.name(element)
    if reader.boolean(element, "isDisabled", False) or not reader.boolean(element, "appliesForce", True):
        return None
    values = {field: reader.text(element, field, "") for field in _FORCE_FIELDS}
    force, point, torque = (_identifier(values[f"{kind}_identifier"]) for kind in ("force", "point", "torque"))
    if not values["applied_to_body"]:
        reader.problem(element, "expected the name of the body the force is applied to", "applied_to_body")
    if force is None and torque is None:
        reader.problem(element, "applies neither a force nor a torque (give force_identifier or torque_identifier)")
    if point is not None and force is None:
        reader.problem(element, "a point is specified for no applied force (give force_identifier)",
                       "point_identifier")
    if name is None or not values["applied_to_body"]:
        return None
    return ExternalForceSpec(name, values["applied_to_body"], values["force_expressed_in_body"] or "ground",
                             values["point_expressed_in_body"] or "ground", force, point, torque,
                             _identifier(values["data_source_name"]))
