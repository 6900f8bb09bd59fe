"""Model files (TOML) and result files: reading, writing and comparing models; writing results.

- :mod:`mbkron.io.reader`: :func:`load_model`, :func:`read_model_file`, :func:`parse_model_file`
  (a :class:`ModelFile`: the model plus the file's units, parameters and SHA-256); a path ending in
  ``.osim`` is imported from OpenSim by :mod:`mbkron.io.osim` (``docs/opensim.md``);
- :mod:`mbkron.io.writer`: :func:`dump_model`, :func:`format_toml`;
- :mod:`mbkron.io.compare`: :func:`model_differences`, :func:`models_equal`;
- :mod:`mbkron.io.formulas`: :func:`evaluate_expression` (formulas in double precision);
- :mod:`mbkron.io.schema`: :data:`FORMAT_VERSION`, :class:`ExpressionValue`;
- :mod:`mbkron.io.results`: :func:`write_atomically`, :func:`write_csv`, :func:`write_json`;
- :mod:`mbkron.io.storage`: OpenSim's ``.mot``/``.sto`` tables, :func:`read_storage`, :func:`write_storage`;
- :mod:`mbkron.io.markers`: marker trajectories of ``.trc`` files, :func:`read_trc`.

The format of model files is documented in ``docs/model-format.md``.

The public names are imported on first use (PEP 562): :func:`load_model` imports the reader only, not
the writer, the comparison or the result files (nor, through them, sympy).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mbkron.core.lazy import lazy_exports

if TYPE_CHECKING:  # the same names, eagerly, for type checkers and IDEs
    from mbkron.io.compare import model_differences, models_equal
    from mbkron.io.formulas import evaluate_expression
    from mbkron.io.markers import MarkerError, Markers, read_trc
    from mbkron.io.reader import ModelFile, load_model, parse_model_file, read_model_file
    from mbkron.io.results import write_atomically, write_csv, write_json
    from mbkron.io.schema import ANGLE_UNITS, FORMAT_VERSION, ExpressionValue
    from mbkron.io.storage import Storage, StorageError, read_storage, write_storage
    from mbkron.io.writer import dump_model, format_toml

__all__ = [
    "ANGLE_UNITS",
    "FORMAT_VERSION",
    "ExpressionValue",
    "MarkerError",
    "Markers",
    "ModelFile",
    "Storage",
    "StorageError",
    "dump_model",
    "evaluate_expression",
    "format_toml",
    "load_model",
    "model_differences",
    "models_equal",
    "parse_model_file",
    "read_model_file",
    "read_storage",
    "read_trc",
    "write_atomically",
    "write_csv",
    "write_json",
    "write_storage",
]

#: The module of each public name (imported when the name is first read).
_LAZY: dict[str, str] = {
    "ANGLE_UNITS": "mbkron.io.schema",
    "ExpressionValue": "mbkron.io.schema",
    "FORMAT_VERSION": "mbkron.io.schema",
    "MarkerError": "mbkron.io.markers",
    "Markers": "mbkron.io.markers",
    "ModelFile": "mbkron.io.reader",
    "Storage": "mbkron.io.storage",
    "StorageError": "mbkron.io.storage",
    "dump_model": "mbkron.io.writer",
    "evaluate_expression": "mbkron.io.formulas",
    "format_toml": "mbkron.io.writer",
    "load_model": "mbkron.io.reader",
    "model_differences": "mbkron.io.compare",
    "models_equal": "mbkron.io.compare",
    "parse_model_file": "mbkron.io.reader",
    "read_model_file": "mbkron.io.reader",
    "read_storage": "mbkron.io.storage",
    "read_trc": "mbkron.io.markers",
    "write_atomically": "mbkron.io.results",
    "write_csv": "mbkron.io.results",
    "write_json": "mbkron.io.results",
    "write_storage": "mbkron.io.storage",
}


__getattr__, __dir__ = lazy_exports("mbkron.io", _LAZY)
