"""The ``granularity`` of ``$bucketAuto`` (MongoDB manual, "$bucketAuto", "Granularity"):
bucket boundaries rounded to a series of preferred numbers (Renard's R5 to R80, the
1-2-5 series, the E series E6 to E192) or to powers of two. The series are the
standard ones, scaled by powers of ten; rounding up gives the first series number
above the value, rounding down the last one below it (a value of 0 stays 0), with the
server's errors for what is not a non-negative number.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

from bson import Decimal128, Int64

from mongocore.sim.codes import CommandError
from mongocore.sim.engine.types import type_name
from mongocore.sim.engine.values import MISSING, is_nan, is_number, numeric_value

__all__ = ["Rounder", "parse_granularity"]

_SERIES: dict[str, tuple[int, ...]] = {
    "R5": (10, 16, 25, 40, 63),
    "R10": (100, 125, 160, 200, 250, 315, 400, 500, 630, 800),
    "R20": (100, 112, 125, 140, 160, 180, 200, 224, 250, 280, 315, 355, 400, 450, 500, 560,
            630, 710, 800, 900),
    "R40": (100, 106, 112, 118, 125, 132, 140, 150, 160, 170, 180, 190, 200, 212, 224, 236,
            250, 265, 280, 300, 315, 355, 375, 400, 425, 450, 475, 500, 530, 560, 600, 630,
            670, 710, 750, 800, 850, 900, 950),
    "R80": (103, 109, 115, 122, 128, 136, 145, 155, 165, 175, 185, 195, 206, 218, 230, 243,
            258, 272, 290, 307, 325, 345, 365, 387, 412, 437, 462, 487, 515, 545, 575, 615,
            650, 690, 730, 775, 825, 875, 925, 975),
    "1-2-5": (10, 20, 50),
    "E6": (10, 15, 22, 33, 47, 68),
    "E12": (10, 12, 15, 18, 22, 27, 33, 39, 47, 56, 68, 82),
    "E24": (10, 11, 12, 13, 15, 16, 18, 20, 22, 24, 27, 30, 33, 36, 39, 43, 47, 51, 56, 62,
            68, 75, 82, 91),
    "E48": (100, 105, 110, 115, 121, 127, 133, 140, 147, 154, 162, 169, 178, 187, 196, 205,
            215, 226, 237, 249, 261, 274, 287, 301, 316, 332, 348, 365, 383, 402, 422, 442,
            464, 487, 511, 536, 562, 590, 619, 649, 681, 715, 750, 787, 825, 866, 909, 953),
    "E96": (100, 102, 105, 107, 110, 113, 115, 118, 121, 124, 127, 130, 133, 137, 140, 143,
            147, 150, 154, 158, 162, 165, 169, 174, 178, 182, 187, 191, 196, 200, 205, 210,
            215, 221, 226, 232, 237, 243, 249, 255, 261, 267, 274, 280, 287, 294, 301, 309,
            316, 324, 332, 340, 348, 357, 365, 374, 383, 392, 402, 412, 422, 432, 442, 453,
            464, 475, 487, 499, 511, 523, 536, 549, 562, 576, 590, 604, 619, 634, 649, 665,
            681, 698, 715, 732, 750, 768, 787, 806, 825, 845, 866, 887, 909, 931, 953, 976),
    "E192": (100, 101, 102, 104, 105, 106, 107, 109, 110, 111, 113, 114, 115, 117, 118, 120,
             121, 123, 124, 126, 127, 129, 130, 132, 133, 135, 137, 138, 140, 142, 143, 145,
             147, 149, 150, 152, 154, 156, 158, 160, 162, 164, 165, 167, 169, 172, 174, 176,
             178, 180, 182, 184, 187, 189, 191, 193, 196, 198, 200, 203, 205, 208, 210, 213,
             215, 218, 221, 223, 226, 229, 232, 234, 237, 240, 243, 246, 249, 252, 255, 258,
             261, 264, 267, 271, 274, 277, 280, 284, 287, 291, 294, 298, 301, 305, 309, 312,
             316, 320, 324, 328, 332, 336, 340, 344, 348, 352, 357, 361, 365, 370, 374, 379,
             383, 388, 392, 397, 402, 407, 412, 417, 422, 427, 432, 437, 442, 448, 453, 459,
             464, 470, 475, 481, 487, 493, 499, 505, 511, 517, 523, 530, 536, 542, 549, 556,
             562, 569, 576, 583, 590, 597, 604, 612, 619, 626, 634, 642, 649, 657, 665, 673,
             681, 690, 698, 706, 715, 723, 732, 741, 750, 759, 768, 777, 787, 796, 806, 816,
             825, 835, 845, 856, 866, 876, 887, 898, 909, 920, 931, 942, 953, 965, 976, 988),
}  # fmt: skip


def _checked(value: Any) -> Any:
    if not is_number(value):
        raise CommandError(
            40262,
            "A granularity rounder can only round numeric values, but found type: "
            + type_name(value),
        )
    number = numeric_value(value)
    if is_nan(number):
        raise CommandError(40263, "A granularity rounder cannot round NaN")
    if number < 0:
        raise CommandError(40268, "A granularity rounder can only round non-negative numbers")
    return number


class Rounder:
    """A granularity: checks the values grouped and rounds the boundaries."""

    def __init__(self, name: str) -> None:
        self.name = name

    def check(self, value: Any) -> None:
        """A value ``groupBy`` gives (the server's 40258-40260)."""
        if not is_number(value):
            raise CommandError(
                40258,
                "$bucketAuto can specify a 'granularity' with numeric boundaries only, but found"
                " a value with type: " + ("missing" if value is MISSING else type_name(value)),
            )
        number = numeric_value(value)
        if is_nan(number):
            raise CommandError(
                40259,
                "$bucketAuto can specify a 'granularity' with numeric boundaries only, but found"
                " a NaN",
            )
        if number < 0:
            raise CommandError(
                40260,
                "$bucketAuto can specify a 'granularity' with non-negative numbers only, but"
                " found a negative number",
            )

    def round_up(self, value: Any) -> Any:
        raise NotImplementedError

    def round_down(self, value: Any) -> Any:
        raise NotImplementedError


class _PreferredNumbers(Rounder):
    """A series scaled by powers of ten. The scale moves by repeated multiplication and
    division by ten, in doubles (or decimals for a Decimal128), so that the boundaries
    carry the same rounding as a server's (0.63 of R5 is 0.6300000000000001)."""

    def __init__(self, name: str, series: tuple[int, ...]) -> None:
        super().__init__(name)
        self.series = series

    def _numbers(self, value: Any) -> tuple[Any, list[Any], Any, bool]:
        number = _checked(value)
        if isinstance(number, Decimal):
            return number, [Decimal(v) for v in self.series], Decimal(1), True
        return float(number), [float(v) for v in self.series], 1.0, False

    def round_up(self, value: Any) -> Any:
        number, series, scale, decimal = self._numbers(value)
        if number == 0:
            return value
        while number >= series[-1] * scale:
            scale *= 10
        while number < series[0] * scale:
            previous = series[0] * scale
            scale /= 10
            if number >= series[-1] * scale:
                return Decimal128(previous) if decimal else previous
        for item in series:
            if number < item * scale:
                result = item * scale
                return Decimal128(result) if decimal else result
        raise AssertionError("unreachable: the number is below the scaled maximum")

    def round_down(self, value: Any) -> Any:
        number, series, scale, decimal = self._numbers(value)
        if number == 0:
            return value
        while number <= series[0] * scale:
            scale /= 10
        while number > series[-1] * scale:
            previous = series[-1] * scale
            scale *= 10
            if number <= series[0] * scale:
                return Decimal128(previous) if decimal else previous
        result = series[0] * scale
        for item in series:
            if item * scale < number:
                result = item * scale
            else:
                break
        return Decimal128(result) if decimal else result


class _PowersOfTwo(Rounder):
    def round_up(self, value: Any) -> Any:
        number = _checked(value)
        if number == 0:
            return value
        if isinstance(value, (int, Int64)) and not isinstance(value, bool):
            result = 1 << int(number).bit_length()
            return Int64(result) if isinstance(value, Int64) or result >= 2**31 else result
        exponent = math.floor(math.log2(float(number))) + 1
        double: float = 2.0**exponent
        if double / 2 > float(number):
            double /= 2
        return Decimal128(Decimal(double)) if isinstance(value, Decimal128) else double

    def round_down(self, value: Any) -> Any:
        number = _checked(value)
        if number == 0:
            return value
        if isinstance(value, (int, Int64)) and not isinstance(value, bool):
            integer = int(number)
            result = 1 << (integer.bit_length() - 1)
            if result == integer:
                result >>= 1
            return Int64(result) if isinstance(value, Int64) else result
        exponent = math.ceil(math.log2(float(number))) - 1
        double: float = 2.0**exponent
        if double * 2 < float(number):
            double *= 2
        return Decimal128(Decimal(double)) if isinstance(value, Decimal128) else double


def parse_granularity(name: str) -> Rounder:
    """The rounder of a granularity's name (the server's 40257 for another name)."""
    if name == "POWERSOF2":
        return _PowersOfTwo(name)
    series = _SERIES.get(name)
    if series is None:
        raise CommandError(40257, f"Rounding granularity not recognized: {name}")
    return _PreferredNumbers(name, series)
