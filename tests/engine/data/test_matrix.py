"""Sequence datasets in NNC's matrix format: a dataset CSV cell naming a per-sample .csv matrix (rows = time
steps, columns = features), decoded into float32 (T, F) arrays with errors naming file, row and column."""
from __future__ import annotations

import numpy as np
import pytest

from nnconsole.engine.data.loading import check_dataset, load_dataset
from nnconsole.engine.data.csv_reader import DatasetError


def write_sequences(folder, matrices, labels=None, name="train.csv"):
    """matrices: list of 2-D lists (or raw text); writes seq/<i>.csv and the main CSV 'x:sequence,y'."""
    (folder / "seq").mkdir(parents=True, exist_ok=True)
    lines = ["x:sequence,y"]
    for i, m in enumerate(matrices):
        text = m if isinstance(m, str) else "\n".join(",".join(str(v) for v in row) for row in m) + "\n"
        (folder / "seq" / f"{i}.csv").write_text(text)
        lines.append(f"seq/{i}.csv,{(labels or [0] * len(matrices))[i]}")
    (folder / name).write_text("\n".join(lines) + "\n")
    return folder / name


def test_matrix_cells_load_as_time_by_feature_arrays(tmp_path, monkeypatch):
    rng = np.random.RandomState(0)
    data = [rng.randn(4, 2).round(4) for _ in range(3)]
    csv = write_sequences(tmp_path / "proj", [d.tolist() for d in data], labels=[1, 0, 1])
    monkeypatch.chdir(tmp_path)  # a relative CSV path, read from another working directory
    ds = load_dataset("proj/train.csv", {"x": (4, 2), "y": (1,)})
    assert ds.shapes == {"x": (4, 2), "y": (1,)} and ds.kinds["x"] == "matrix"
    got = ds.gather("x", np.arange(3))
    assert got.dtype == np.float32 and np.allclose(got, np.stack(data), atol=1e-6)
    # without an Input shape: the matrix's own (T, F); with a flat Input of T*F values: reshaped like nnabla
    assert load_dataset(str(csv)).shapes["x"] == (4, 2)
    assert load_dataset(str(csv), {"x": (8,)}).gather("x", [2]).tolist() == [data[2].astype(np.float32).ravel().tolist()]


@pytest.mark.parametrize("matrix,expected", [
    ("1,2\n3\n", "row 2: 1 values where row 1 has 2"),
    ("1,2\n3,abc\n", "row 2, column 2: non-numeric value 'abc'"),
    ("1,2\n3,nan\n", "row 2, column 2: value 'nan' is not a finite number"),
    ("\n\n", "the matrix is empty"),
    ("x,y\n1,2\n", "row 1, column 1: non-numeric value 'x'"),
])
def test_bad_matrices_name_the_dataset_line_the_file_row_and_column(tmp_path, matrix, expected):
    csv = write_sequences(tmp_path, [[[0, 0], [0, 0]], matrix])
    with pytest.raises(DatasetError) as err:
        load_dataset(str(csv))
    text = str(err.value)
    assert "train.csv line 3, column x" in text and "matrix 'seq/1.csv'" in text and expected in text


def test_samples_of_different_lengths_and_wrong_input_shapes_are_refused(tmp_path):
    csv = write_sequences(tmp_path, [[[0, 0], [0, 0]], [[1, 1], [1, 1], [1, 1]]])
    with pytest.raises(DatasetError, match=r"line 3, column x: matrix 'seq/1.csv' is 3x2 but the one on line 2 is "
                                           r"2x2; every sample"):
        load_dataset(str(csv))
    csv = write_sequences(tmp_path / "b", [[[0, 0], [0, 0]]])
    with pytest.raises(DatasetError, match=r"Input 'x' expects shape \[3, 2\]"):
        load_dataset(str(csv), {"x": (3, 2)})


def test_matrix_paths_stay_inside_the_project_and_must_exist(tmp_path):
    project = tmp_path / "proj"
    csv = write_sequences(project, [[[0, 1]]])
    outside = tmp_path / "secret.csv"
    outside.write_text("1,2\n")
    csv.write_text("x:sequence,y\n../secret.csv,0\n")
    with pytest.raises(DatasetError, match="points outside the project's folder"):
        check_dataset(str(csv), confine_to=str(project))
    csv.write_text("x:sequence,y\nseq/missing.csv,0\n")
    with pytest.raises(DatasetError, match="matrix file 'seq/missing.csv' not found"):
        check_dataset(str(csv))
    csv.write_text("x:sequence,y\nseq/0.csv,0\nseq,1\n")
    with pytest.raises(DatasetError, match="not a .csv matrix path"):
        load_dataset(str(csv))
