"""Write the gan_2d template's data: real 2-D points x ~ N((2, -1), 0.5^2 I), 400 training and 100 validation
rows (numpy only, seeded: the same files every time). The generator's noise z ~ N(0, I) and the discriminator's
targets one (1) and zero (0) are not data: the template's Inputs generate them (generator Normal and Constant,
NNC's Generator property), as NNC runs its GAN samples.

Usage: python project_templates/tools/make_gan_2d.py [OUTPUT_FOLDER]  (default: the template's data/)
"""
from __future__ import annotations

import os
import sys

import numpy as np

REAL_MEAN = (2.0, -1.0)
REAL_STD = 0.5


def write(folder: str) -> None:
    rng = np.random.RandomState(2017)
    os.makedirs(folder, exist_ok=True)
    for name, n in (("train.csv", 400), ("validation.csv", 100)):
        x = rng.randn(n, 2) * REAL_STD + np.asarray(REAL_MEAN)
        rows = [",".join(f"{v:.6f}" for v in x[i]) for i in range(n)]
        with open(os.path.join(folder, name), "w", newline="\n") as fh:
            fh.write("x__0,x__1\n" + "\n".join(rows) + "\n")


if __name__ == "__main__":
    write(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                              "..", "gan_2d", "data"))
