"""Per-step host overhead benchmark, Python side: the twin of mlp_step.lua with the same model
(Linear-GELU-Linear-GELU-Linear), AdamW, gradient clipping, cosine-with-warmup LambdaLR and
index_select batching, in PyTorch from the setup venv. Prints mean ms/step over the timed steps.
    python tests/bench/mlp_step.py --threads 1 --batch-size 16
"""
import argparse
import math
import time

import torch


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    n, d_in, d_out = 8192, 8, 2
    x_all, y_all = torch.randn(n, d_in), torch.randn(n, d_out)
    model = torch.nn.Sequential(torch.nn.Linear(d_in, 128), torch.nn.GELU(), torch.nn.Linear(128, 128),
                                torch.nn.GELU(), torch.nn.Linear(128, d_out))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-4)
    total, warm = args.steps + args.warmup, 10

    def factor(step):
        if step < warm:
            return step / max(1, warm)
        progress = (step - warm) / max(1, total - warm)
        return max(0.0, 0.5 * (1.0 + math.cos(math.pi * 0.5 * 2.0 * progress)))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, factor)
    order = torch.randperm(n)
    start = None
    for step in range(1, total + 1):
        if step == args.warmup + 1:
            start = time.perf_counter()
        offset = ((step - 1) * args.batch_size) % (n - args.batch_size)
        idx = order.narrow(0, offset, args.batch_size)
        x, y = x_all.index_select(0, idx), y_all.index_select(0, idx)
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        sched.step()
    elapsed = time.perf_counter() - start
    print(f"python mlp step: batch {args.batch_size}, threads {torch.get_num_threads()}: "
          f"{1000 * elapsed / args.steps:.4f} ms/step")


if __name__ == "__main__":
    main()
