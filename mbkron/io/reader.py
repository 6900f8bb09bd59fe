"""Reading model files: :func:`load_model`, :func:`read_model_file`, :func:`parse_model_file`.

A model file is TOML (read with the standard library's :mod:`tomllib`) describing the units,
parameters, generalized coordinates, bodies, joint variables, loads and muscles of a model; the
format is documented with an annotated example in ``docs/model-format.md``. Validation collects
every problem of the file into one :class:`~mbkron.core.errors.ModelError` whose lines name the
table path (``bodies.forearm.inertia``) and what was expected. Angles are converted to radians
once, here. Formulas are parsed by the whitelist parser
:func:`mbkron.expressions.parser.parse_expression` and evaluated in double precision
(:func:`mbkron.io.formulas.evaluate_expression`).

The reader is one class assembled from the readers of the sections:
:class:`~mbkron.io.reader_bodies.BodyReader` (units, parameters, coordinates, bodies),
:class:`~mbkron.io.reader_constraints.ConstraintReader` and
:class:`~mbkron.io.reader_loads.LoadReader` (loads, muscles), all on
:class:`~mbkron.io.reader_values.ValueReader`.
"""

from __future__ import annotations

import hashlib
import re
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from mbkron.model.backend import check_backend
from mbkron.core.errors import ModelError
from mbkron.io.reader_bodies import BodyReader
from mbkron.io.reader_constraints import ConstraintReader
from mbkron.io.reader_loads import LoadReader
from mbkron.io.osim import read_osim
from mbkron.io.reader_values import show, show_key, suggest
from mbkron.io.reader_wraps import WrapReader
from mbkron.io.schema import ANGLE_UNITS, FORMAT_VERSION, MAX_ENTRIES, MAX_FILE_CHARACTERS, SECTIONS
from mbkron.model.builder import ModelBuilder
from mbkron.model.model import Model

__all__ = ["ModelFile", "load_model", "parse_model_file", "read_model_file"]


@dataclass(frozen=True)
class ModelFile:
    """A model read from a model file, with what the file said beyond the model itself.

    Attributes
    ----------
    model : Model
    source : str
        The file path (or the name given to :func:`parse_model_file`).
    angle_unit : {"rad", "deg"}
        The file's ``[units] angle``: the unit of angles people read and write for this model.
    parameters : dict of str to float
        The named parameters, evaluated.
    description : str
        ``[model] description``.
    sha256 : str
        SHA-256 of the file's bytes (hex).
    solved : dict of str to str
        For each joint variable solved from constraints, a description of its ``[[constraints]]``
        group (the model itself does not record the groups).
    """

    model: Model
    source: str
    angle_unit: str
    parameters: dict[str, float] = field(default_factory=dict)
    description: str = ""
    sha256: str = ""
    solved: dict[str, str] = field(default_factory=dict)

    @property
    def angle_scale(self) -> float:
        """Radians per unit of :attr:`angle_unit`."""
        return ANGLE_UNITS[self.angle_unit]

    def coordinate_scale(self, name: str) -> float:
        """SI units per file unit of coordinate ``name`` (the angle scale for angles, else 1)."""
        return self.angle_scale if self.model.coordinate(name).unit == "rad" else 1.0


def load_model(path: str | Path, backend: str | None = None, *, wrapping: str = "import") -> Model:
    """Read a model definition file (TOML, see ``docs/model-format.md``) or an OpenSim model.

    A path ending in ``.osim`` (any case) is imported from OpenSim's format by
    :func:`mbkron.io.osim.read_osim` (see ``docs/opensim.md``); any other path is read as TOML.

    Parameters
    ----------
    path : str or path-like
    backend : {"compiled"}, optional
        Kept for compatibility: every model is evaluated by the one engine, ``"compiled"``
        (:mod:`mbkron.model.backend`); ``"numpy"`` (the removed route) raises ValueError.
    wrapping : {"import", "ignore", "error"}
        ``.osim`` files only: paths keep their wrap objects (``"import"``, default), are imported
        without them with a warning (``"ignore"``), or raise a ModelError naming every such path
        (``"error"``).

    Returns
    -------
    Model

    Raises
    ------
    ModelError
        Listing every problem in the file (with the file name and table paths), or why the file
        cannot be read.
    ValueError
        A ``backend`` other than ``"compiled"`` or None.

    Examples
    --------
    >>> import mbkron
    >>> model = mbkron.load_model("models/two_link_arm.toml")   # doctest: +SKIP
    >>> model.coordinates                                        # doctest: +SKIP
    ('alpha1', 'alpha2')
    """
    return read_model_file(path, backend, wrapping=wrapping).model


def read_model_file(path: str | Path, backend: str | None = None, *, wrapping: str = "import") -> ModelFile:
    """Read a model definition file; like :func:`load_model` but returns the :class:`ModelFile`."""
    source = str(path)
    if Path(path).suffix.lower() == ".osim":
        backend = check_backend(backend)  # checked before any work
        imported = read_osim(path, wrapping=wrapping)
        return _ModelReader(source).read(imported.document, imported.sha256, backend)
    most = 4 * MAX_FILE_CHARACTERS  # bytes of UTF-8 text of MAX_FILE_CHARACTERS characters: never read more
    try:
        with Path(path).open("rb") as file:
            data = file.read(most + 1)
    except OSError as exc:
        raise ModelError([exc.strerror or str(exc)], source, unreadable=True) from None
    if len(data) > most:
        raise ModelError([f"the file has more than {most:,} bytes; model files of at most {MAX_FILE_CHARACTERS:,} "
                          "characters are read (see Limits in docs/model-format.md)"], source)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ModelError([f"the file is not UTF-8 text (byte {exc.start})"], source) from None
    return parse_model_file(text, source, sha256=hashlib.sha256(data).hexdigest(), backend=backend)


def parse_model_file(text: str, source: str = "<string>", *, sha256: str | None = None,
                     backend: str | None = None) -> ModelFile:
    """Parse model-file text.

    Parameters
    ----------
    text : str
        TOML text.
    source : str
        Name used in error messages (a file name).
    sha256 : str, optional
        Hash recorded in the result (by default the SHA-256 of ``text`` encoded as UTF-8).
    backend : str, optional
        As for :func:`load_model`.

    Returns
    -------
    ModelFile

    Raises
    ------
    ModelError
        Listing every problem found.
    """
    if not isinstance(text, str):
        raise TypeError(f"model-file text must be a string, got {type(text).__name__}")
    backend = check_backend(backend)  # checked before any work
    if len(text) > MAX_FILE_CHARACTERS:
        raise ModelError([f"the file has {len(text):,} characters; model files of at most {MAX_FILE_CHARACTERS:,} "
                          "are read (see Limits in docs/model-format.md)"], source)
    counted = _counted_entries(text)  # a cheap lower bound, before the TOML is parsed (seconds per MB)
    if counted:
        raise ModelError([f"{section}: at least {count:,} entries; at most {MAX_ENTRIES[section]:,} are read (see Limits "
                          "in docs/model-format.md)" for section, count in counted.items()], source)
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ModelError([f"not valid TOML: {exc}"], source) from None
    except RecursionError:
        raise ModelError(["not valid TOML here: arrays or tables are nested too deeply"], source) from None
    except ValueError:  # Python's limit on the digits of an integer converted from text (sys.get_int_max_str_digits)
        raise ModelError([_long_integer(text)], source) from None
    too_many = [f"{section}: {len(document[section]):,} entries; at most {limit:,} are read "
                "(see Limits in docs/model-format.md)" for section, limit in MAX_ENTRIES.items()
                if isinstance(document.get(section), (dict, list)) and len(document[section]) > limit]
    if too_many:
        raise ModelError(too_many, source)
    if sha256 is None:
        sha256 = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return _ModelReader(source).read(document, sha256, backend)


_HEADER = re.compile(r"[ \t]*(\[\[?)[ \t]*([A-Za-z0-9_-]+)[ \t]*(?:\.[ \t]*(\"[^\"\n]*\"|'[^'\n]*'|[A-Za-z0-9_-]+))?")
_KEY = re.compile(r"[ \t]*(\"[^\"\n]*\"|'[^'\n]*'|[A-Za-z0-9_-]+)[ \t]*[.=]")


def _counted_entries(text: str) -> dict[str, int]:
    """The sections of ``text`` with more entries than :data:`MAX_ENTRIES` by a scan of its lines.

    Linear in the text and much cheaper than parsing it: counts distinct ``[section.NAME…]``
    headers, ``[[section]]`` headers, and distinct keys on the lines under a ``[section]`` header,
    outside multi-line strings. Every line counted is an entry of valid TOML (a line inside a
    multi-line array that looks like a header is not valid TOML), so the counts are lower bounds and
    only files that the full parse would refuse are refused.
    """
    names: dict[str, set[str]] = {section: set() for section in MAX_ENTRIES}
    tables = dict.fromkeys(MAX_ENTRIES, 0)
    current: str | None = None  # the section whose keys the lines define (after a `[section]` header)
    in_string = False
    for line in text.splitlines():
        quotes = line.count('"""') + line.count("'''")
        if in_string or quotes % 2:
            in_string = in_string != (quotes % 2 == 1)
            continue
        header = _HEADER.match(line)
        if header:
            opening, section, name = header.groups()
            current = None
            if section in names:
                if opening == "[[" and name is None:
                    tables[section] += 1
                elif name is not None:
                    names[section].add(name.strip("\"'"))
                elif line.strip() == f"[{section}]":
                    current = section
            continue
        if current is not None:
            key = _KEY.match(line)
            if key:
                names[current].add(key.group(1).strip("\"'"))
    counts = {section: max(len(names[section]), tables[section]) for section in MAX_ENTRIES}
    return {section: count for section, count in counts.items() if count > MAX_ENTRIES[section]}


def _long_integer(text: str) -> str:
    """The message for a TOML integer too long for Python to convert, with its line when it is found."""
    limit = sys.get_int_max_str_digits()
    found = re.search(rf"(?<![0-9_])[0-9](?:_?[0-9]){{{limit},}}", text)  # from the start of a run only: linear
    where = f" (line {text.count(chr(10), 0, found.start()) + 1})" if found else ""
    return (f"not valid TOML here{where}: an integer literal has more than {limit:,} digits; "
            "expected a number of at most 309 digits (the double-precision range)")


class _ModelReader(BodyReader, ConstraintReader, LoadReader, WrapReader):
    """Reads one parsed TOML document, collecting problems; see :func:`parse_model_file`."""

    def read(self, document: dict, sha256: str, backend: str) -> ModelFile:
        for key in document:
            if key not in SECTIONS:
                self.problem(show_key(key), f"unknown section; expected one of: {', '.join(SECTIONS)}{suggest(key, SECTIONS)}")
        model_table = self.table(document.get("model", {}), "model") or {}
        units = self.table(document.get("units", {}), "units") or {}
        self.read_units(units)
        self.keys(model_table, "model", [], ["format_version", "name", "description", "gravity"])
        version = model_table.get("format_version", FORMAT_VERSION)
        if isinstance(version, bool) or not isinstance(version, int) or version != FORMAT_VERSION:
            self.problem("model.format_version", f"this mbkron reads format version {FORMAT_VERSION}, got {show(version)}")
        default_name = "model" if self.source.startswith("<") else Path(self.source).stem
        name = self.string(model_table.get("name", default_name), "model.name") or "model"
        description = self.string(model_table.get("description", ""), "model.description") or ""
        coordinates = self.table(document.get("coordinates", {}), "coordinates") or {}
        parameters = self.table(document.get("parameters", {}), "parameters") or {}
        coordinate_names = self.declare_names(coordinates, parameters)
        self.read_parameters(parameters)
        gravity = self.vector(model_table.get("gravity", [0.0, -9.81, 0.0]), "model.gravity") or [0.0, -9.81, 0.0]
        builder = ModelBuilder(name=name, gravity=gravity)
        self.read_coordinates(coordinates, coordinate_names, builder)
        bodies = self.table(document.get("bodies", {}), "bodies") or {}
        groups = document.get("constraints", [])
        if not isinstance(groups, list):
            self.problem("constraints", f"expected an array of tables ([[constraints]] sections), got {show(groups)}")
            groups = []
        self.solved = {j for g in groups if isinstance(g, dict) and isinstance(g.get("joints"), list)
                       for j in g["joints"] if isinstance(j, str)}
        for body, table in bodies.items():
            self.read_body(body, table, builder)
        self.declare_joint_names(bodies)
        for index, group in enumerate(groups):
            self.read_constraint_group(group, f"constraints[{index}]", bodies, builder)
        self.read_wraps(document.get("wraps", {}))  # before the loads: path springs and ligaments may wrap
        loads = document.get("loads", [])
        if not isinstance(loads, list):
            self.problem("loads", f"expected an array of tables ([[loads]] sections), got {show(loads)}")
            loads = []
        for index, load in enumerate(loads):
            self.read_load(load, f"loads[{index}]", builder)
        muscles = self.table(document.get("muscles", {}), "muscles") or {}
        for muscle, table in muscles.items():
            self.read_muscle(muscle, table, builder)
        model = None
        try:
            model = builder.build(backend, source=self.source)
        except ModelError as exc:
            self.problems.extend(exc.problems)
        except RecursionError:
            self.problem("", "an expression is nested too deeply to be differentiated")
        if self.problems:
            raise ModelError(self.problems, self.source)
        ordered = {name: self.parameters[name] for name in parameters if name in self.parameters}
        return ModelFile(model, self.source, self.angle_unit, ordered, description, sha256, self.solved_by)
