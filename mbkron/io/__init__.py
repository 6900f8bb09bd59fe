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
"""

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
