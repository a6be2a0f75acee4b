#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Trains the small digits CNN and writes it as a full-int8 TFLite model (demo/digits_cnn.tflite).

The model `make demo` runs with `tpu infer` (demo/digits_cnn.py). It is committed, so
neither the demo nor the tests need TensorFlow; this script is only for regenerating it.

1. Loads the 8x8 digits bundled with scikit-learn (pixels 0..16) and splits them as
   demo/digits_mlp.py does: stratified 75/25, random_state 0. Pixels are scaled to
   [0, 1] as float32, shape (8, 8, 1).
2. Trains a Keras CNN with fixed seeds (Keras's global seed and deterministic ops):

       Conv2D 8 filters 3x3 SAME, ReLU        8x8x1 -> 8x8x8
       MaxPool2D 2x2                          -> 4x4x8
       Conv2D 16 filters 3x3 VALID, ReLU      -> 2x2x16
       Flatten                                -> 64
       Dense 10 (logits, no softmax)          -> 10

   trained on softmax cross-entropy from the logits, so the model has no SOFTMAX.
3. Converts it with the TFLite converter to full int8: every training image is the
   representative dataset, only TFLITE_BUILTINS_INT8 operators, int8 input and output
   (no float QUANTIZE/DEQUANTIZE at the edges), weights per output channel (the
   converter's default), and writes the .tflite file.

Prints the float test accuracy and the int8 model's input and output quantization.

To regenerate (TensorFlow 2.14.1, Keras 2.14.0 as bundled, scikit-learn 1.9.1, numpy 1.26.4;
TF 2.14 pairs with the project's reference interpreter, tflite-runtime 2.14.0), in a
throwaway virtual environment outside the tree, on the CPU:

    python3 -m venv /tmp/tfvenv
    /tmp/tfvenv/bin/pip install tensorflow-cpu==2.14.1 scikit-learn==1.9.1 numpy==1.26.4
    /tmp/tfvenv/bin/python demo/make_digits_cnn.py [--out demo/digits_cnn.tflite]
"""

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")   # before TensorFlow is imported

import numpy as np

REPO = Path(__file__).resolve().parent.parent
SEED = 0                       # split and training, as in demo/digits_mlp.py
PIXEL_MAX = 16.0               # load_digits pixels are 0..16
EPOCHS = 60
BATCH = 32


def load_split():
    """The digits as (samples, 8, 8, 1) float32 in [0, 1], split as demo/digits_mlp.py."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x_tr, x_te, y_tr, y_te = train_test_split(
        digits.data, digits.target, test_size=0.25, stratify=digits.target, random_state=SEED)
    def images(x):
        return (x / PIXEL_MAX).astype(np.float32).reshape(-1, 8, 8, 1)
    return images(x_tr), images(x_te), y_tr, y_te


def build_model(tf):
    layers = tf.keras.layers
    return tf.keras.Sequential([
        layers.Input(shape=(8, 8, 1), name="image"),
        layers.Conv2D(8, 3, padding="same", activation="relu", name="conv1"),
        layers.MaxPool2D(2, name="pool1"),
        layers.Conv2D(16, 3, padding="valid", activation="relu", name="conv2"),
        layers.Flatten(name="flatten"),
        layers.Dense(10, name="logits"),
    ], name="digits_cnn")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(REPO / "demo/digits_cnn.tflite"), help="the .tflite file to write")
    ap.add_argument("--epochs", type=int, default=EPOCHS, help="training epochs")
    args = ap.parse_args()

    import tensorflow as tf

    x_tr, x_te, y_tr, y_te = load_split()
    tf.keras.utils.set_random_seed(SEED)
    tf.config.experimental.enable_op_determinism()

    model = build_model(tf)
    model.compile(optimizer=tf.keras.optimizers.Adam(1e-2),
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    model.fit(x_tr, y_tr, epochs=args.epochs, batch_size=BATCH, shuffle=True, verbose=0)
    model.summary(print_fn=lambda s: print("  " + s))
    logits = model.predict(x_te, verbose=0)
    acc_float = float(np.mean(np.argmax(logits, axis=1) == y_te))
    print(f"float CNN: {len(y_tr)} training, {len(y_te)} test samples, test accuracy {acc_float:.2%}")

    def representative():
        for i in range(len(x_tr)):
            yield [x_tr[i:i + 1]]

    conv = tf.lite.TFLiteConverter.from_keras_model(model)
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    conv.representative_dataset = representative
    conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    conv.inference_input_type = tf.int8
    conv.inference_output_type = tf.int8
    flat = conv.convert()

    out = Path(args.out)
    out.write_bytes(flat)
    interp = tf.lite.Interpreter(model_content=flat)
    inp, outp = interp.get_input_details()[0], interp.get_output_details()[0]
    print(f"wrote {out} ({len(flat)} bytes): input {inp['dtype'].__name__} {inp['shape'].tolist()} "
          f"scale {inp['quantization'][0]:.9g} zero point {inp['quantization'][1]}, "
          f"output {outp['dtype'].__name__} {outp['shape'].tolist()} "
          f"scale {outp['quantization'][0]:.9g} zero point {outp['quantization'][1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
