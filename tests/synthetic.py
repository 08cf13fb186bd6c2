"""Synthetic Part I records with known answers, for the analysis and verdict tests."""

from fibook.forgetting.experiments import run_id
from fibook.forgetting.train import Summary, TrainConfig
from fibook.results import Record


def rec(sigma, seed, acc, tau, final_norm, optimizer="sgd", lr=0.01, wd=0.0, status="ok", final_acc=None,
        experiment="x", **config):
    """A finished run at ``sigma``/``seed`` with selected test accuracy ``acc``, interpolation epoch ``tau``,
    initial weight norm 10 sigma and final norm ``final_norm``; ``config`` overrides other config fields."""
    init = 10.0 * sigma
    c = TrainConfig(optimizer=optimizer, lr=lr, weight_decay=wd, sigma_w=sigma, seed=seed, **({"epochs": 3} | config))
    summary = Summary(selected_epoch=1, selected_test_acc=acc, selected_val_acc=acc, final_train_acc=1.0,
                      final_test_acc=acc if final_acc is None else final_acc, tau_interp=tau, repair_gap=None,
                      init_weight_norm=init, final_weight_norm=final_norm,
                      clocks={"T_SGD": 1e-3, "T_L2": 5.0 * wd, "T_adapt": 0.5}, steps=3)
    return Record(id=run_id(c), experiment=experiment, scale="smoke", status=status, config=c, summary=summary,
                  history={"weight_norm": [init, init * 1.1, final_norm]}, layer_names=[], diverged_epoch=None)
