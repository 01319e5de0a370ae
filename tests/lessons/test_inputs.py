"""Matrices and vectors typed as text: separators, errors, caps and the round trip."""
from __future__ import annotations

import numpy as np
import pytest

from playground.lessons import LessonInputError
from playground.lessons.inputs import format_matrix, parse_matrix, parse_vector


def test_separators_and_round_trip():
    m = parse_matrix("1, 0; 0.2 0.1\n-0.5,0.3", "M", 8, 8)
    np.testing.assert_array_equal(m, [[1, 0], [0.2, 0.1], [-0.5, 0.3]])
    np.testing.assert_array_equal(parse_matrix(format_matrix(m), "M", 8, 8), m)
    np.testing.assert_array_equal(parse_vector("2, 1 0.5; −0.5", "v", 8), [2, 1, 0.5, -0.5])


@pytest.mark.parametrize("text, message", [
    ("", "empty"), ("1, 2; 3", "same number of entries"), ("1, a", "'a' is not a number"),
    ("inf, 1", "finite"), ("1e5", "at most 10000"), ("1;2;3", "at most 2 rows"), ("1 2 3", "at most 2 numbers"),
])
def test_matrix_errors(text, message):
    with pytest.raises(LessonInputError, match=message):
        parse_matrix(text, "M", 2, 2)
