"""Reading the ``[wraps.NAME]`` section of a model file and a muscle's ``wraps`` list.

``[wraps.NAME]``: ``kind`` (``"sphere"``, ``"cylinder"``, ``"ellipsoid"``, ``"torus"``:
:data:`mbkron.multibody.muscles.surfaces.KINDS`),
``body`` (a body or ``"ground"``), ``translation`` (m, default 0), ``rotation`` (body-fixed X-Y-Z
angles in the file's angle unit, default 0), ``quadrant`` (default ``"all"``), ``active`` (default
true) and the kind's shape parameters (``radius``, ``length``, ``dimensions``, ``inner_radius`` and
``outer_radius``, … in m: a number, or 3 numbers for a vector). A muscle's ``wraps`` is an array of
wrap-object names or tables ``{object, range, method}``.
"""

from __future__ import annotations

from mbkron.io.reader_values import ValueReader, join, show, suggest
from mbkron.multibody.muscles.surfaces import KINDS
from mbkron.multibody.muscles.wrapping import QUADRANTS, WRAP_METHODS, PathWrap, shape_fields

__all__ = ["WrapReader"]

_QUADRANT_NAMES = ("all", "+x", "-x", "x", "+y", "-y", "y", "+z", "-z", "z")


class WrapReader(ValueReader):
    """Reads the ``[wraps.NAME]`` tables (into ``self.wrap_objects``) and muscles' ``wraps`` lists."""

    wrap_objects: dict

    def read_wraps(self, value: object) -> None:
        """The ``[wraps]`` section: one surface per table, by name."""
        self.wrap_objects = {}
        wraps = self.table(value, "wraps") or {}
        for name, table in wraps.items():
            path = join("wraps", name)
            table = self.table(table, path)
            if table is None:
                continue
            kind = self.string(table.get("kind"), join(path, "kind"), tuple(KINDS)) if "kind" in table else None
            if kind is None:
                if "kind" not in table:
                    self.problem(path, f"`kind` is required (one of: {', '.join(map(repr, KINDS))})")
                continue
            surface_class = KINDS[kind]
            shape = shape_fields(surface_class)
            self.keys(table, path, ["kind", "body", *shape], ["translation", "rotation", "quadrant", "active"])
            values = {"name": name,
                      "body": self.string(table.get("body"), join(path, "body")) if "body" in table else None,
                      "translation": self.vector(table.get("translation", [0.0, 0.0, 0.0]), join(path, "translation")),
                      "xyz_body_rotation": self.number_array(table.get("rotation", [0.0, 0.0, 0.0]), join(path, "rotation"),
                                                             scale=self.angle_scale),
                      "quadrant": self.quadrant(table.get("quadrant", "all"), join(path, "quadrant")),
                      "active": self.boolean(table.get("active", True), join(path, "active"))}
            rotation = values["xyz_body_rotation"]
            if rotation is not None and len(rotation) != 3:
                self.problem(join(path, "rotation"), f"expected an array of 3 angles (X, Y, Z), got {show(table['rotation'])}")
                continue
            for key in shape:
                if key in table:
                    given = table[key]
                    values[key] = (self.vector(given, join(path, key)) if isinstance(given, list)
                                   else self.number(given, join(path, key)))
            if any(v is None for v in values.values()) or not all(key in values for key in shape):
                continue
            surface = surface_class(**{k: tuple(v) if isinstance(v, list) else v for k, v in values.items()})
            problems = [p for p in surface.shape_problems(path) if p]
            self.problems.extend(problems)
            if not problems:
                self.wrap_objects[name] = surface

    def quadrant(self, value: object, path: str) -> str | None:
        """OpenSim's quadrant names (any spelling OpenSim reads, ``"all"``, ``"+x"``, ``"x"``, ``"-y"``, …)."""
        if isinstance(value, str) and value in QUADRANTS:
            return value
        self.problem(path, f"expected one of: {', '.join(map(repr, _QUADRANT_NAMES))}, got {show(value)}")
        return None

    def muscle_wraps(self, value: object, path: str) -> tuple | None:
        """A muscle's ``wraps``: names of ``[wraps]`` tables or ``{object, range = [first, last], method}``."""
        if not isinstance(value, list):
            self.problem(path, f"expected an array of wrap-object names or tables {{ object, range, method }}, got {show(value)}")
            return None
        wraps, ok = [], True
        for index, entry in enumerate(value):
            where = join(path, index)
            table = {"object": entry} if isinstance(entry, str) else self.table(entry, where)
            if table is None:
                ok = False
                continue
            self.keys(table, where, ["object"], ["range", "method"])
            name = table.get("object")
            if not isinstance(name, str) or name not in self.wrap_objects:
                known = ", ".join(self.wrap_objects) or "(none)"
                hint = suggest(name, self.wrap_objects) if isinstance(name, str) else ""
                self.problem(join(where, "object") if isinstance(entry, dict) else where,
                             f"expected the name of a [wraps] table ({known}), got {show(name)}{hint}")
                ok = False
                continue
            bounds = table.get("range", [-1, -1])
            if (not isinstance(bounds, list) or len(bounds) != 2
                    or not all(isinstance(b, int) and not isinstance(b, bool) for b in bounds)):
                self.problem(join(where, "range"), "expected 2 integers [first, last] (1-based path points, -1 for the "
                                                   f"ends), got {show(bounds)}")
                ok = False
                continue
            method = self.string(table.get("method", "hybrid"), join(where, "method"), WRAP_METHODS)
            if method is None:
                ok = False
                continue
            wraps.append(PathWrap(self.wrap_objects[name], tuple(bounds), method))
        return tuple(wraps) if ok else None

