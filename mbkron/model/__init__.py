"""The model: its description (:class:`Model`), how it is built (:class:`ModelBuilder`) and evaluated.
"""

from mbkron.model.builder import ModelBuilder
from mbkron.model.checks import rigid_transform
from mbkron.model.model import Model

__all__ = ["Model", "ModelBuilder", "rigid_transform"]
