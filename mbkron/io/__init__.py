"""Model files (TOML): reading, writing and comparing models.
"""

from mbkron.io.model_files import dump_model, load_model, model_differences, models_equal, read_model_file

__all__ = ["dump_model", "load_model", "model_differences", "models_equal", "read_model_file"]
