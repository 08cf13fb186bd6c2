"""Synthetic Part I records with known answers, for the analysis and verdict tests."""


def rec(sigma, seed, acc, tau, final_norm, optimizer="sgd", lr=0.01, wd=0.0, status="ok", final_acc=None):
    init = 10.0 * sigma
    return {
        "status": status,
        "config": {"dataset": "fashion_mnist", "arch": "resnet9", "width": 16, "optimizer": optimizer, "lr": lr,
                   "weight_decay": wd, "batch_size": 128, "epochs": 3, "sigma_w": sigma, "seed": seed},
        "summary": {"selected_test_acc": acc, "final_test_acc": acc if final_acc is None else final_acc,
                    "tau_interp": tau, "init_weight_norm": init,
                    "final_weight_norm": final_norm, "clocks": {"T_SGD": 1e-3, "T_L2": 5.0 * wd, "T_adapt": 0.5}},
        "history": {"weight_norm": [init, init * 1.1, final_norm]}, "layer_names": [], "diverged_epoch": None,
        "provenance": {},
    }
