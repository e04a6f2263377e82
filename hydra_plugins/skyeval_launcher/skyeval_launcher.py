"""`hydra/launcher=slurm` (conf/hydra/launcher/slurm.yaml): skyeval's SLURM launcher.

Hydra instantiates launchers found in the `hydra_plugins` namespace only; the launcher is
`skyeval.run.launcher.SlurmLauncher`, which also registers its config schema."""

from skyeval.run.launcher import SlurmLauncher as _SlurmLauncher


class SlurmLauncher(_SlurmLauncher):
    """See `skyeval.run.launcher`."""
