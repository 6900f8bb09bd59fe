"""The description of a model: records, their checks, and their packing for the kernels.

- :mod:`mbkron.multibody.records` -- ``GROUND``, ``Coordinate``, ``Body``;
- :mod:`mbkron.multibody.tree` -- the kinematic tree as arrays: joint kinds, joint transforms and matrices;
- :mod:`mbkron.multibody.jointvars` -- ``Linear`` and ``CoordinateFunction`` joint variables;
- :mod:`mbkron.multibody.loads`, :mod:`~mbkron.multibody.bushings`, :mod:`~mbkron.multibody.contact`,
  :mod:`~mbkron.multibody.hunt_crossley` -- loads (``mbkron.loads`` is :mod:`mbkron.multibody.loads`);
- :mod:`mbkron.multibody.muscles` -- paths, moving and conditional points, wrap surfaces, path springs,
  ligaments, Hill parameters;
- :mod:`mbkron.multibody.layout` -- the packing of a description for the kernels.

A record keeps a method only where its implementation lies below it (a wrap surface's ``solve`` is
:mod:`mbkron.numerics.geodesics`'); evaluation at states is :mod:`mbkron.algorithms`'.
"""
