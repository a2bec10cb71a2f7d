// Validates Kubernetes objects against the API schemas of the npm package
// kubernetes-models (used by tests/integration/helm_test.py).
//
//   NODE_PATH=DIR/node_modules node helm_validate.js OBJECTS.json
//
// OBJECTS.json: [{"id": "...", "object": {...}}, ...]. Prints one JSON line
// per object, {"id", "ok": true} or {"id", "ok": false, "error": "..."}; an
// apiVersion/kind the package does not know is an error, never a pass.
//
//   NODE_PATH=DIR/node_modules node helm_validate.js --serve
//
// reads the path of one OBJECTS.json per line of stdin and answers each as
// above, then {"done": PATH}: one process for every check of a test run, so
// that kubernetes-models' modules are loaded once.
"use strict";
const fs = require("fs");
const readline = require("readline");

function validateFile(path) {
  const items = JSON.parse(fs.readFileSync(path, "utf8"));
  for (const { id, object } of items) {
    process.stdout.write(JSON.stringify(validate(id, object)) + "\n");
  }
}

function validate(id, object) {
  const out = { id, ok: false };
  try {
    const api = object && object.apiVersion;
    const kind = object && object.kind;
    if (typeof api !== "string" || typeof kind !== "string") {
      throw new Error("no apiVersion/kind");
    }
    let mod;
    try {
      mod = require(`kubernetes-models/${api}`);
    } catch (e) {
      throw new Error(`apiVersion ${api} is not known to kubernetes-models`);
    }
    const Model = mod[kind];
    if (typeof Model !== "function") {
      throw new Error(`kind ${kind} is not known in ${api}`);
    }
    if (Model.apiVersion !== api || Model.kind !== kind) {
      throw new Error(`model mismatch: ${Model.apiVersion}/${Model.kind}`);
    }
    new Model(object).validate();
    out.ok = true;
  } catch (e) {
    out.error = String(e && e.message ? e.message : e);
  }
  return out;
}

if (process.argv[2] === "--serve") {
  const rl = readline.createInterface({ input: process.stdin, terminal: false });
  rl.on("line", (path) => {
    validateFile(path);
    process.stdout.write(JSON.stringify({ done: path }) + "\n");
  });
} else {
  validateFile(process.argv[2]);
}
