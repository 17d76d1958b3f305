"""``mlflow``: a run's logged rows as MLflow metrics (off by default).

``lipgan run --logger mlflow`` (or ``Trainer.fit(loggers=["mlflow"])``) starts an MLflow run,
logs the run's settings as parameters once and every logged row as metrics at its step, and ends
the MLflow run when training ends. Where MLflow writes is MLflow's own setting
(``MLFLOW_TRACKING_URI``; by default ``./mlruns``). Without ``mlflow`` installed the logger
refuses in one line before training starts (``pip install 'lipgan-example-logger[mlflow]'``). It
exists to show what a third-party logger needs: a :class:`lipgan.core.logger.Logger` subclass and
one ``@hookimpl``; a W&B logger is the same with ``wandb.init``/``wandb.log``.
"""

from lipgan import hookimpl
from lipgan.core.errors import ConfigError
from lipgan.core.logger import Logger

__version__ = "0.1.0"


def _flat(settings: dict, prefix: str = "") -> dict:
    """Nested settings as MLflow parameters: ``{"step_config.n_critic": "5", ...}``."""
    out = {}
    for key, value in settings.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_flat(value, name + "."))
        else:
            out[name] = str(value)[:500]  # MLflow's parameter values are limited in length
    return out


class MlflowLogger(Logger):
    """Every logged row to MLflow (chief only)."""

    name = "mlflow"
    description = "Every logged row as MLflow metrics (example plugin; needs mlflow)."

    def __init__(self):
        try:
            import mlflow
        except ImportError:
            raise ConfigError(
                "the mlflow logger needs MLflow: pip install 'lipgan-example-logger[mlflow]'"
            ) from None
        self.mlflow = mlflow
        self.active = False

    def on_train_begin(self, step: int, steps: int) -> None:
        if not self.view.chief:
            return
        name = self.view.run_dir.name if self.view.run_dir is not None else None
        self.mlflow.start_run(run_name=name)
        self.active = True
        self.mlflow.log_params(_flat(self.view.settings))

    def on_log(self, step: int, metrics: dict) -> None:
        if self.active:
            numbers = {k.replace("/", "."): float(v) for k, v in metrics.items()}
            self.mlflow.log_metrics(numbers, step=step)

    def on_train_end(self, state) -> None:
        if self.active:
            self.mlflow.end_run()
            self.active = False


@hookimpl
def lipgan_register_loggers(register):
    register(MlflowLogger)
