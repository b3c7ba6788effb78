"""The values of generated inputs (issue 26 item 5): each generator's statistics match its definition (nnabla's
``_get_generator``: Normal sigma = multiplier, Uniform in [-m, m], Constant m, Range 0, m, 2m...), and a row's
values depend only on its stream and slot, so a worker filling its share of a logical batch gets what one
worker gets for those rows."""
from __future__ import annotations

import numpy as np
import pytest

from nnconsole.engine.data.generated import generate, stream_key, training_slots

KEY = stream_key(7, "optimizer0", "z", "train", epoch=3)


def test_normal_values_have_mean_zero_and_the_multiplier_as_standard_deviation():
    made = generate("Normal", 2.5, (4, 5), KEY, np.arange(2000))
    assert made.shape == (2000, 4, 5) and made.dtype == np.float32
    values = made.astype(np.float64)
    # 40,000 draws: the mean's standard error is 2.5 / 200 = 0.0125, the std's about 0.009
    assert abs(values.mean()) < 0.05 and abs(values.std() - 2.5) < 0.04
    per_row = values.reshape(2000, -1)
    assert np.corrcoef(per_row[:-1, 0], per_row[1:, 0])[0, 1] < 0.1  # neighbouring rows are not alike


def test_uniform_values_fill_minus_m_to_m():
    values = generate("Uniform", 0.5, (3,), KEY, np.arange(10000)).astype(np.float64)
    assert values.min() >= -0.5 and values.max() <= 0.5
    assert abs(values.mean()) < 0.01 and abs(values.var() - 0.25 / 3) < 0.003  # var of U(-m, m) = m^2 / 3
    assert values.min() < -0.49 and values.max() > 0.49


def test_constant_and_range_values():
    assert np.all(generate("Constant", -1.5, (2, 3), KEY, np.arange(4)) == -1.5)
    ranged = generate("Range", 0.5, (2, 3), KEY, np.arange(4))
    assert np.array_equal(ranged[3, 1], [0.0, 0.5, 1.0])
    with pytest.raises(ValueError, match="generator must be one of"):
        generate("Gaussian", 1.0, (2,), KEY, np.arange(2))


def test_rows_depend_on_the_stream_and_slot_only():
    whole = generate("Normal", 1.0, (6,), KEY, training_slots(5, 32, 0, 1))  # one worker, batch 32
    shares = [generate("Normal", 1.0, (6,), KEY, training_slots(5, 16, r, 2)) for r in range(2)]  # 2 x 16
    assert np.array_equal(np.concatenate(shares), whole)
    # slot 170 is row 10 of iteration 5 at 32 a batch, whatever else is asked for with it
    assert np.array_equal(generate("Normal", 1.0, (6,), KEY, [3, 170])[1], whole[10])
    other_epoch = generate("Normal", 1.0, (6,), stream_key(7, "optimizer0", "z", "train", epoch=4),
                           training_slots(5, 32, 0, 1))
    other_stream = generate("Normal", 1.0, (6,), stream_key(7, "optimizer1", "z", "train", epoch=3),
                            training_slots(5, 32, 0, 1))
    assert not np.allclose(other_epoch, whole) and not np.allclose(other_stream, whole)
