"""TensorBoard interop check: TensorBoard 2.21's own readers read the event files lrhost's
TensorBoardWriter wrote (tests/interop/tensorboard_write.cpp) and see exactly what the driver listed
in EXPECTED_JSON.

    tensorboard_check.py LOGDIR EXPECTED_JSON

Checks, each failing with a message naming the file, tag and step:
  1. raw records: every file read record by record by TensorBoard's TFRecord reader (the tensorflow
     stub's PyRecordReader_New, which checks both CRCs of every record) and by RawEventFileLoader;
     every record parses as an Event; the first is file_version "brain.Event:2"; the events are the
     listed ones, in order (values to float32, wall times and steps exact);
  2. a flipped byte in a copy makes TensorBoard's reader fail its CRC check (header and data);
  3. event_accumulator.EventAccumulator (legacy, size_guidance 0 = keep all): every scalar tag has
     exactly run 1's points below the resume step and run 2's from it on (the SessionLog START purge),
     no duplicated step; the text entries through Tensors();
  4. plugin_event_accumulator.EventAccumulator (what the `tensorboard` server uses): the same for
     scalars and text, including that run 1's text after the resume step is purged, and that the
     scalar and text plugins list the tags.
"""

import json
import math
import os
import shutil
import struct
import sys
import tempfile

import numpy as np
from tensorboard.backend.event_processing import event_accumulator
from tensorboard.backend.event_processing import event_file_loader
from tensorboard.backend.event_processing import plugin_event_accumulator
from tensorboard.compat.proto import event_pb2
from tensorboard.compat.tensorflow_stub import errors as stub_errors
from tensorboard.compat.tensorflow_stub import pywrap_tensorflow as stub
from tensorboard.util import tensor_util

failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
    return condition


def as_float32(value):
    with np.errstate(over="ignore"):
        return float(np.float32(float(value)))


def same_float(a, b):
    return (math.isnan(a) and math.isnan(b)) or a == b


def read_records_strict(path):
    """All records of `path` through tensorboard's stub TFRecord reader (raises DataLossError on a
    CRC mismatch or a truncated record)."""
    reader = stub.PyRecordReader_New(path.encode())
    records = []
    while True:
        try:
            reader.GetNext()
        except stub_errors.OutOfRangeError:
            return records
        records.append(reader.record())


def expected_event_text(event):
    """A line describing an expected event, for messages."""
    return "run %d %s %s step %d" % (event["run"], event["kind"], event.get("tag", ""), event["step"])


def check_raw_file(path, expected_events):
    name = os.path.basename(path)
    records = read_records_strict(path)
    loaded = list(event_file_loader.RawEventFileLoader(path).Load())
    check(loaded == records,
          "%s: RawEventFileLoader read %d records, the strict reader %d" % (name, len(loaded), len(records)))
    events = [event_pb2.Event.FromString(record) for record in records]
    if not check(len(events) == len(expected_events) + 1,
                 "%s: %d records, expected file_version + %d events" % (name, len(events), len(expected_events))):
        return
    first = events[0]
    check(first.file_version == "brain.Event:2", "%s: first record is not file_version 2: %s" % (name, first))
    # The file_version event carries the wall time of the event that created the file.
    opened = float(expected_events[0]["wall_time"])
    check(first.wall_time == opened, "%s: file_version wall_time %r" % (name, first.wall_time))
    for event, want in zip(events[1:], expected_events):
        where = "%s: %s" % (name, expected_event_text(want))
        check(event.step == want["step"], "%s: step %d" % (where, event.step))
        check(event.wall_time == float(want["wall_time"]),
              "%s: wall_time %r != %s" % (where, event.wall_time, want["wall_time"]))
        if want["kind"] == "session_start":
            check(event.WhichOneof("what") == "session_log" and event.session_log.status == event_pb2.SessionLog.START,
                  "%s: not a SessionLog START: %s" % (where, event))
            continue
        one_value = event.WhichOneof("what") == "summary" and len(event.summary.value) == 1
        if not check(one_value, "%s: not one summary value" % where):
            continue
        value = event.summary.value[0]
        check(value.tag == want["tag"], "%s: tag %r" % (where, value.tag))
        if want["kind"] == "scalar":
            simple = value.WhichOneof("value") == "simple_value"
            check(simple and same_float(value.simple_value, as_float32(want["value"])),
                  "%s: simple_value %r, expected float32(%s)" % (where, value.simple_value, want["value"]))
        else:
            plugin = value.metadata.plugin_data.plugin_name
            check(plugin == "text", "%s: plugin %r" % (where, plugin))
            text = tensor_util.make_ndarray(value.tensor)
            check(text.shape == () and text.item().decode("utf-8") == want["text"], "%s: text %r" % (where, text))
    return len(records)


def check_flipped_bytes(path):
    """TensorBoard's reader rejects a copy with one flipped byte in a length and in a record's data."""
    data = open(path, "rb").read()
    (first_length,) = struct.unpack("<Q", data[:8])
    second = 12 + first_length + 4  # the second record (the first event after file_version)
    for offset, section in ((second + 1, "header"), (second + 12 + 5, "event")):
        with tempfile.TemporaryDirectory() as tmp:
            copy = os.path.join(tmp, "events.out.tfevents.corrupt")
            corrupted = bytearray(data)
            corrupted[offset] ^= 0x10
            open(copy, "wb").write(bytes(corrupted))
            try:
                read_records_strict(copy)
                check(False, "a flipped %s byte at offset %d was not detected" % (section, offset))
            except stub_errors.DataLossError as error:
                check("failed %s crc32 check" % section in str(error),
                      "unexpected error for a flipped %s byte: %s" % (section, error))


def visible_events(events, resume_step, kind, purge):
    """What a reader that applies the resume purge to `kind` should show: run 1's events below the
    resume step and all of run 2's (without the purge: everything)."""
    return [e for e in events if e["kind"] == kind and (not purge or e["run"] == 2 or e["step"] < resume_step)]


def by_tag(events):
    tags = {}
    for event in events:
        tags.setdefault(event["tag"], []).append(event)
    return tags


def compare_series(reader, tag, got, want, value_of):
    """got: [(wall_time, step, value)] as read; want: expected events of one tag, in order."""
    steps = [step for _, step, _ in got]
    check(len(steps) == len(set(steps)), "%s %s: duplicated steps %s" % (reader, tag, steps))
    if not check(len(got) == len(want), "%s %s: %d points, expected %d (steps %s, expected %s)" % (
            reader, tag, len(got), len(want), steps, [e["step"] for e in want])):
        return
    for (wall_time, step, value), e in zip(got, want):
        where = "%s %s step %d" % (reader, tag, e["step"])
        check(step == e["step"], "%s: got step %d" % (where, step))
        check(wall_time == float(e["wall_time"]), "%s: wall_time %r != %s" % (where, wall_time, e["wall_time"]))
        wanted = e.get("value", e.get("text"))
        check(value_of(value, e), "%s: value %r, expected %r (run %d)" % (where, value, wanted, e["run"]))


def scalar_matches(value, event):
    return same_float(float(value), as_float32(event["value"]))


def text_matches(tensor_proto, event):
    array = tensor_util.make_ndarray(tensor_proto)
    return array.shape == () and array.item().decode("utf-8") == event["text"]


def check_legacy_accumulator(logdir, events, resume_step):
    keep_all = {key: 0 for key in event_accumulator.DEFAULT_SIZE_GUIDANCE}
    acc = event_accumulator.EventAccumulator(logdir, size_guidance=keep_all)
    acc.Reload()
    scalars = by_tag(visible_events(events, resume_step, "scalar", purge=True))
    check(sorted(acc.Tags()["scalars"]) == sorted(scalars), "EventAccumulator scalar tags %s" % acc.Tags()["scalars"])
    for tag, want in scalars.items():
        got = [(s.wall_time, s.step, s.value) for s in acc.Scalars(tag)]
        compare_series("EventAccumulator", tag, got, want, scalar_matches)
    # The legacy reader does not purge tensors (its _Purge covers scalars, histograms, images and
    # audio only), so run 1's text after the resume step stays there; compare all text entries.
    texts = by_tag(visible_events(events, resume_step, "text", purge=False))
    check(sorted(acc.Tags()["tensors"]) == sorted(texts), "EventAccumulator tensor tags %s" % acc.Tags()["tensors"])
    for tag, want in texts.items():
        got = [(t.wall_time, t.step, t.tensor_proto) for t in acc.Tensors(tag)]
        compare_series("EventAccumulator", tag, sorted(got, key=lambda g: (g[1], g[0])),
                       sorted(want, key=lambda e: (e["step"], float(e["wall_time"]))), text_matches)


def check_plugin_accumulator(logdir, events, resume_step):
    acc = plugin_event_accumulator.EventAccumulator(logdir, size_guidance={plugin_event_accumulator.TENSORS: 0})
    acc.Reload()
    scalars = by_tag(visible_events(events, resume_step, "scalar", purge=True))
    texts = by_tag(visible_events(events, resume_step, "text", purge=True))
    for plugin, tags in (("scalars", scalars), ("text", texts)):
        listed = sorted(acc.PluginTagToContent(plugin))
        check(listed == sorted(tags), "%s plugin tags %s, expected %s" % (plugin, listed, sorted(tags)))
    for tag, want in scalars.items():
        got = [(t.wall_time, t.step, tensor_util.make_ndarray(t.tensor_proto).item()) for t in acc.Tensors(tag)]
        compare_series("plugin EventAccumulator", tag, got, want, scalar_matches)
    for tag, want in texts.items():
        got = [(t.wall_time, t.step, t.tensor_proto) for t in acc.Tensors(tag)]
        compare_series("plugin EventAccumulator", tag, got, want, text_matches)


def main():
    logdir, expected_path = sys.argv[1], sys.argv[2]
    expected = json.load(open(expected_path, encoding="utf-8"))
    events, resume_step = expected["events"], expected["resume_step"]
    files = sorted(name for name in os.listdir(logdir) if "tfevents" in name)
    check(files == expected["files"], "event files %s, expected %s (reading order)" % (files, expected["files"]))
    total = 0
    for run, name in enumerate(expected["files"], start=1):
        total += check_raw_file(os.path.join(logdir, name), [e for e in events if e["run"] == run]) or 0
    print("raw records: %d in %d files, every CRC checked" % (total, len(files)))
    check_flipped_bytes(os.path.join(logdir, expected["files"][0]))

    check_legacy_accumulator(logdir, events, resume_step)
    check_plugin_accumulator(logdir, events, resume_step)

    # The checks must be able to fail: the purge must actually have hidden run 1's later points.
    hidden = [e for e in events if e["kind"] == "scalar" and e["run"] == 1 and e["step"] >= resume_step]
    check(len(hidden) > 0, "the driver wrote no run-1 scalars at or after the resume step: the purge is untested")

    if failures:
        print("FAILED (%d):" % len(failures))
        for failure in failures[:50]:
            print("  " + failure)
        return 1
    print("ok: %d events (%d hidden by the resume at step %d) read back by TensorBoard"
          % (len(events), len(hidden), resume_step))
    return 0


if __name__ == "__main__":
    sys.exit(main())
