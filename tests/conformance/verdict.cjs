// The end of a check script: what failed, one `FAIL` line each, and exit
// status 1; or `OK`, which the Rust tests look for.
"use strict";

// Prints the verdict on `problems` (exits 1 when there are any).
function report(problems) {
  if (problems.length) {
    console.log(`FAIL ${problems.join("\nFAIL ")}`);
    process.exit(1);
  }
  console.log("OK");
}

// Runs the script's async `main`, a throw being a failure of its own.
function run(main) {
  main().catch((e) => {
    console.log(`FAIL ${e.stack || e}`);
    process.exit(1);
  });
}

module.exports = { report, run };
