"""OpenSim model files (``.osim``, OpenSim 4 format) as mbkron models; see ``docs/opensim.md``.

:func:`read_osim` turns a file into the document the model-file reader consumes (an
:class:`OsimDocument`), so :func:`mbkron.load_model` builds the model from it and
``mbkron convert`` writes it as a model file. Modules: :mod:`~mbkron.io.osim.xml` (safe XML
reading), :mod:`~mbkron.io.osim.functions` (OpenSim functions), :mod:`~mbkron.io.osim.coordinates`
(coordinates, couplers), :mod:`~mbkron.io.osim.joints` (joints, frames, bodies),
:mod:`~mbkron.io.osim.muscles` (muscles, paths), :mod:`~mbkron.io.osim.forces` (springs, limit forces),
:mod:`~mbkron.io.osim.constraints` (loop-closing constraints), :mod:`~mbkron.io.osim.document` (the assembly).
"""

from mbkron.io.osim.document import WRAPPING, OsimDocument, osim_document, read_osim
from mbkron.io.osim.xml import MAX_OSIM_BYTES

__all__ = ["MAX_OSIM_BYTES", "WRAPPING", "OsimDocument", "osim_document", "read_osim"]
