"""Recipe scripts, one per method: `python -m recipes.<method> --config recipes/configs/<profile>/<method>.yaml`."""

from core.library_noise import quiet

quiet()
