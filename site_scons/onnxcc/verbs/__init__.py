"""What a user runs on a built model: verify against onnxruntime, bench, profile,
autotune, the HTML report and the firmware integration files."""
