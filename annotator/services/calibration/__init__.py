"""Gold calibration of annotators: serving (which gold traces are calibration items, the gate, when one is
served, the scores against gold) and answer (the gold answer shown after submitting one). Import what you
need from here.
"""

from annotator.services.calibration.answer import Feedback, FeedbackRow, feedback, feedback_available
from annotator.services.calibration.serving import (
    CalibrationError,
    Gate,
    annotator_scores,
    calibration_waiting,
    do_add_items,
    do_configure,
    do_remove_items,
    gate,
    gold_items,
    item_trace_ids,
    mode_score_json,
    next_calibration,
    scores_json,
    scores_withheld,
    settings_json,
    uses_calibration,
)

__all__ = [
    "CalibrationError",
    "Feedback",
    "FeedbackRow",
    "Gate",
    "annotator_scores",
    "calibration_waiting",
    "do_add_items",
    "do_configure",
    "do_remove_items",
    "feedback",
    "feedback_available",
    "gate",
    "gold_items",
    "item_trace_ids",
    "mode_score_json",
    "next_calibration",
    "scores_json",
    "scores_withheld",
    "settings_json",
    "uses_calibration",
]
