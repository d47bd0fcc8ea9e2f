"""Does the local policy learn tasks it was not designed around? A hundred and eighty-nine new tasks, default settings.

    python bench/bench_generality.py [TASK ...] [--timeout 300] [--keep]

The tasks live in ``bench/tasks/`` and are written against the public SDK only, as a new user would
write them: string maps (uppercase, first_letters, plural, repeat_word, shift_letters, capitalize,
drop_vowels, add_commas, snake_case, date_format, pig_latin, swap_case, work_username, initials,
phone_digits, strip_dashes, replace_word, mask_card, short_address, clean_dictation, drop_title, drop_brackets, hashtag, surname_first, roman_numeral, clock_24h, shelf_title, expand_contractions, new_extension, double_barrelled), selection (pick_largest, longer_word, last_letter, middle_word, largest_number,
letter_at, pick_category, starts_with, cheapest, youngest, duplicate_name, rhyme_pick,
closest_number, twin_letters, fastest_runner, odd_one_out, still_open, free_slot, rainy_day, absent_name, who_ordered, veggie_pick, expired_item, next_birthday, safe_dish, size_in_stock, cabin_bag, film_runtime, what_to_cook, gym_class, water_first), ordering (sort_letters, swap_words,
reverse_words, month_order, alphabetize, sort_numbers, height_order, time_order, length_order,
queue_order, score_rank, price_order, speaking_order, size_order, chore_rotation, priority_order, unit_order, box_stack, planet_order, week_plan, playlist_order, boarding_zones, bill_due_order, section_order, charge_order, generation_order), counting (count_letter, word_count, vowel_count, word_length,
list_length, count_even, distinct_letters, count_animals, count_above, rsvp_count, count_legs,
count_digits, longest_streak, count_color, tasks_done, count_sentences, bus_stops, weekend_shifts, sock_pairs, missed_calls, vote_tally, people_mentioned, long_months, delayed_trains, quiz_score, goals_scored, workout_days, messages_from, lift_stops, lights_on), classification with a free-text answer
(parity, vowel_start, age_group) and through ``guided_choice`` (sentiment, has_letter, in_order, bigger_number,
is_palindrome, time_of_day, quadrant, letter_grade, triangle_type, leap_year, season, file_kind,
water_state, contact_type, compass_heading, currency_name, dial_country, bill_status, password_strength, ph_reading, sentence_type, verb_tense, email_folder, blood_pressure, recycle_bin, beaufort_force, measure_kind, tyre_pressure, egg_size), numbers computed from the prompt's (next_number, years_between,
add_three, double_number, change_due, age_later, digit_sum, total_price, minutes_left), and
multi-turn games (guess_number, remember_word, two_letters, running_total, recall_parity, countdown,
name_and_city, shopping_list, which_room, pet_names, warmer_colder, door_code, first_or_second,
read_back, locker_number, meeting_place, order_change, visit_days, party_size, spelled_surname, hotel_floor, parking_spot, guest_arrivals, itinerary_stop, lost_item, time_difference, packing_check, whose_turn, meeting_moves, letter_by_letter, pass_on_message).
Tasks were added in rounds, each written after the policy
was last changed and first run as it stood; docs/local-policy.md says which are still blind (no part of
the policy was chosen by looking at them). Each run starts as the MCP server starts one (a control plane
selects the task, makes no edits, and starts the resolved run document on the local profile),
so the environment's defaults and the local trainer's defaults are what is measured. The script
prints each task's held-out curve (train and eval percent correct per evaluation, with the wall
time since the run started), the first time the eval reached 0.9, and a summary against the
aim: eval >= 0.9 within 180 s. ``--set FIELD=VALUE`` edits every task's config (for exploring;
the suite's figures are with none).

Runs still going when the script exits (timeout, Ctrl-C, error) are stopped.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml
from config_edits import add_set_option  # this script's folder: python bench/bench_generality.py
from stopping import exit_on_sigterm, stop_runs

HERE = Path(__file__).resolve().parent
TASKS = (
    "uppercase", "pick_largest", "sort_letters", "count_letter", "parity", "sentiment", "guess_number",
    "longer_word", "has_letter", "remember_word", "first_letters", "word_count", "in_order",
    "vowel_count", "last_letter", "bigger_number", "swap_words",
    "middle_word", "word_length", "is_palindrome", "two_letters",
    "next_number", "years_between", "add_three", "running_total",
    "double_number", "change_due", "age_later",
    "list_length", "digit_sum", "plural",
    "total_price", "minutes_left", "repeat_word",
    "shift_letters", "largest_number", "reverse_words", "recall_parity",
    "capitalize", "letter_at", "countdown",
    "vowel_start", "pick_category", "count_even", "name_and_city",
    "drop_vowels", "starts_with", "month_order", "distinct_letters", "time_of_day", "shopping_list",
    "add_commas", "cheapest", "alphabetize", "count_animals", "quadrant", "which_room",
    "snake_case", "youngest", "sort_numbers", "count_above", "letter_grade", "pet_names",
    "date_format", "duplicate_name", "height_order", "rsvp_count", "triangle_type", "warmer_colder",
    "pig_latin", "rhyme_pick", "time_order", "count_legs", "leap_year", "door_code",
    "swap_case", "closest_number", "length_order", "count_digits", "season", "first_or_second",
    "work_username", "twin_letters", "queue_order", "longest_streak", "file_kind", "read_back",
    "initials", "fastest_runner", "score_rank", "count_color", "water_state", "locker_number",
    "phone_digits", "odd_one_out", "price_order", "tasks_done", "contact_type", "meeting_place",
    "strip_dashes", "still_open", "count_sentences", "age_group", "compass_heading", "order_change",
    "replace_word", "free_slot", "speaking_order", "bus_stops", "currency_name", "visit_days",
    "mask_card", "rainy_day", "size_order", "weekend_shifts", "dial_country", "party_size",
    "short_address", "absent_name", "chore_rotation", "sock_pairs", "bill_status", "spelled_surname",
    "clean_dictation", "who_ordered", "priority_order", "missed_calls", "password_strength", "hotel_floor",
    "drop_title", "veggie_pick", "unit_order", "vote_tally", "ph_reading", "parking_spot",
    "drop_brackets", "expired_item", "box_stack", "people_mentioned", "sentence_type", "guest_arrivals",
    "hashtag", "next_birthday", "planet_order", "long_months", "verb_tense", "itinerary_stop",
    "surname_first", "safe_dish", "week_plan", "delayed_trains", "email_folder", "lost_item",
    "roman_numeral", "size_in_stock", "playlist_order", "quiz_score", "blood_pressure", "time_difference",
    "clock_24h", "cabin_bag", "boarding_zones", "goals_scored", "recycle_bin", "packing_check",
    "shelf_title", "film_runtime", "bill_due_order", "workout_days", "beaufort_force", "whose_turn",
    "expand_contractions", "what_to_cook", "section_order", "messages_from", "measure_kind", "meeting_moves",
    "new_extension", "gym_class", "charge_order", "lift_stops", "tyre_pressure", "letter_by_letter",
    "double_barrelled", "water_first", "generation_order", "lights_on", "egg_size", "pass_on_message",
)
BAR = 0.9
MAX_WALL = 180.0
FAILED_LOG_LINES = 12  # of each component's log, printed for a run that failed
POLL = 0.5


def read_metrics(path: Path) -> list[dict[str, Any]]:
    rows = []
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                rows.append(json.loads(line))
            except ValueError:
                continue
    return rows


def held_out_curve(rows: list[dict[str, Any]], began: float) -> list[dict[str, Any]]:
    """One point per evaluation: step, seconds since the run started, eval and mean train
    percent correct since the previous evaluation."""
    curve: list[dict[str, Any]] = []
    pending: list[float] = []
    for row in sorted(rows, key=lambda r: (r.get("step", 0), r.get("time", 0))):
        if "train/percent_correct" in row:
            pending.append(float(row["train/percent_correct"]))
        if "eval/percent_correct" in row:
            curve.append(
                {
                    "step": int(row["step"]),
                    "seconds": float(row.get("time", began)) - began,
                    "train": sum(pending) / len(pending) if pending else None,
                    "eval": float(row["eval/percent_correct"]),
                }
            )
            pending = []
    return curve


def fmt(value: Any, width: int = 7) -> str:
    return f"{value:>{width}.3f}" if isinstance(value, (int, float)) else f"{'-':>{width}}"


def run_task(name: str, state: Path, timeout: float, edits: dict[str, str]) -> dict[str, Any]:
    from hermes_rl_mcp.core.control import ControlPlane
    from hermes_rl_mcp.runs import TERMINAL_STATES, check_status, get_results, start_run, stop_run

    plane = ControlPlane(state_dir=state)
    plane.select_environment(name)
    for field, value in edits.items():
        plane.edit_config(field, yaml.safe_load(value))
    document = plane.run_document().to_data()
    began = time.time()
    started = start_run(document, state=state)
    print(f"\n== {name}: run {started.run_id}; env.total_steps={document['env'].get('total_steps')} "
          f"env.group_size={document['env'].get('group_size')} trainer={json.dumps(document.get('trainer', {}))}", flush=True)
    status = check_status(started.run_id, state=state)
    while status.status not in TERMINAL_STATES:
        if time.time() - began > timeout:
            print(f"   timeout after {timeout:.0f} s; stopping the run", flush=True)
            # now, not when the script ends: a run left going takes CPU from the tasks after it
            stop_run(started.run_id, state=state)
            break
        time.sleep(POLL)
        status = check_status(started.run_id, state=state)
    results = get_results(started.run_id, state=state)
    curve = held_out_curve(read_metrics(Path(started.run_dir) / "metrics.jsonl"), began)
    print(f"   {'step':>6} {'seconds':>8} {'train%':>7} {'eval%':>7}")
    for point in curve:
        print(f"   {point['step']:>6} {point['seconds']:>8.1f} {fmt(point['train'])} {fmt(point['eval'])}")
    reached = next((p for p in curve if p["eval"] >= BAR), None)
    best = max((p["eval"] for p in curve), default=None)
    print(f"   status {results.status} ({results.reason or ''}); step {results.step}/{results.total_steps}; "
          f"ended after {(results.ended_at or time.time()) - began:.1f} s")
    print(f"   eval >= {BAR}: " + (f"at step {reached['step']}, {reached['seconds']:.1f} s" if reached else "never"))
    if results.status == "failed":  # the state directory goes unless --keep: show why it failed
        for log in sorted((Path(started.run_dir) / "logs").glob("*.log")):
            tail = log.read_text(encoding="utf-8", errors="replace").splitlines()[-FAILED_LOG_LINES:]
            print(f"   -- last lines of {log.name}:\n" + "\n".join(f"      {line}" for line in tail))
    return {
        "task": name,
        "status": results.status,
        "final_eval": curve[-1]["eval"] if curve else None,
        "best_eval": best,
        "seconds_to_bar": reached["seconds"] if reached else None,
        "step_to_bar": reached["step"] if reached else None,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tasks", nargs="*", metavar="TASK", help=f"tasks to run (default: all of {', '.join(TASKS)})")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds before a run is stopped (default 300)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary state directory")
    add_set_option(parser, "a config edit for every task (default: none)")
    args = parser.parse_args(argv)
    edits = dict(args.set)
    unknown = [name for name in args.tasks if name not in TASKS]
    if unknown:
        parser.error(f"unknown task(s) {', '.join(unknown)}; valid: {', '.join(TASKS)}")
    exit_on_sigterm()

    state = Path(tempfile.mkdtemp(prefix="hermes-rl-bench-generality-"))
    os.environ["HERMES_RL_HOME"] = str(state)
    os.environ["HERMES_RL_ENV_DIRS"] = str(HERE / "tasks")
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    os.environ.pop("WANDB_API_KEY", None)  # a benchmark never uploads
    outcomes: list[dict[str, Any]] = []
    try:
        for name in args.tasks or TASKS:
            outcomes.append(run_task(name, state, args.timeout, edits))
    finally:
        stop_runs(state)
        if args.keep:
            print(f"\nstate kept in {state}")
        else:
            shutil.rmtree(state, ignore_errors=True)

    print(f"\n== summary: eval >= {BAR} within {MAX_WALL:.0f} s")
    met = 0
    for o in outcomes:
        ok = o["seconds_to_bar"] is not None and o["seconds_to_bar"] <= MAX_WALL
        met += ok
        when = f"{o['seconds_to_bar']:.0f} s (step {o['step_to_bar']})" if o["seconds_to_bar"] is not None else "never"
        print(f"   {o['task']:<14} [{o['status']}] final eval {fmt(o['final_eval'], 0)}, best {fmt(o['best_eval'], 0)}; "
              f"reached {BAR}: {when}: {'met' if ok else 'NOT met'}")
    print(f"   {met} of {len(outcomes)} met")
    return 0 if met == len(outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
