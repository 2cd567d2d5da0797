"""Helpers over [positions, vocab] logit arrays shared by the logits comparisons."""
import numpy as np


def top1_top2_margin(logits):
    """Per row, the largest value minus the second largest (ties give 0). Two max passes
    instead of a sort: sorting a 300 x 151,936 float64 array took ~17 s of a golden case."""
    rows = np.arange(len(logits))
    first = logits.argmax(axis=-1)
    rest = np.array(logits, copy=True)
    rest[rows, first] = -np.inf
    return logits[rows, first] - rest.max(axis=-1)


def log_softmax(logits):
    """log_softmax over the last axis, in float64."""
    x = np.asarray(logits).astype(np.float64)
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


class LogitStats:
    """pagellm's [T, vocab] float32 logits (upcast to float64) against a float64 reference of
    the same shape, as the golden tests compare them: max |ours - ref|, max |ref|, the
    reference's top1-top2 margin per row and whether the argmaxes agree per row; with an
    `exact` reference also max |ours - exact| / max |exact|.
    Read from the .npy files memory-mapped, a few rows at a time: the whole-array arrays and
    temporaries of a 300-token prompt (~365 MB each in float64) cost seconds of page faults
    per golden case. Maxima, argmaxes and margins are per element or per row, so the values
    are those of the whole-array expressions."""

    ROWS = 16

    def __init__(self, ours_path, ref_path, exact_path=None):
        ours, ref = np.load(ours_path, mmap_mode="r"), np.load(ref_path, mmap_mode="r")
        exact = np.load(exact_path, mmap_mode="r") if exact_path else None
        self.shapes = (ours.shape, ref.shape)
        self.same_shape = ours.shape == ref.shape and (exact is None or exact.shape == ours.shape)
        if not self.same_shape:
            return
        # np.maximum, not max(): a NaN propagates as in the whole-array max.
        self.max_diff = self.scale = self.exact_diff = self.exact_scale = np.float64(0)
        margins, agree = [], []
        for start in range(0, ours.shape[0], self.ROWS):
            o = np.asarray(ours[start:start + self.ROWS], dtype=np.float64)
            r = np.asarray(ref[start:start + self.ROWS])
            self.max_diff = np.maximum(self.max_diff, np.abs(o - r).max())
            self.scale = np.maximum(self.scale, np.abs(r).max())
            margins.append(top1_top2_margin(r))
            agree.append(o.argmax(1) == r.argmax(1))
            if exact is not None:
                e = np.asarray(exact[start:start + self.ROWS])
                self.exact_diff = np.maximum(self.exact_diff, np.abs(o - e).max())
                self.exact_scale = np.maximum(self.exact_scale, np.abs(e).max())
        self.rel = self.max_diff / self.scale
        self.exact_rel = self.exact_diff / self.exact_scale if exact is not None else 0.0
        self.margin, self.agree = np.concatenate(margins), np.concatenate(agree)
