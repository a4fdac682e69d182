// Checks every instance of cases.json with ajv (JSON Schema 2020-12,
// ajv-formats in full mode): each "valid" text must parse and validate,
// each "invalid" text must fail to parse or to validate. Development only:
//   mkdir /tmp/ajvcheck && cd /tmp/ajvcheck && npm install ajv ajv-formats
//   NODE_PATH=/tmp/ajvcheck/node_modules node tests/data/json_schema/check_ajv.mjs
import { createRequire } from "module";
import { readFileSync } from "fs";
const require = createRequire(process.env.NODE_PATH + "/");
const Ajv2020 = require("ajv/dist/2020").default;
const addFormats = require("ajv-formats");
const cases = JSON.parse(readFileSync(new URL("./cases.json", import.meta.url)));
let good = 0, bad = 0;
for (const c of cases) {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv, { mode: "full" });
  const validate = ajv.compile(c.schema);
  const check = (text) => { try { return validate(JSON.parse(text)); } catch { return false; } };
  for (const t of c.valid) check(t) ? good++ : (bad++, console.log(`${c.name}: valid instance rejected by ajv: ${t}`));
  for (const t of c.invalid) !check(t) ? good++ : (bad++, console.log(`${c.name}: invalid instance accepted by ajv: ${t}`));
}
console.log(`ajv: ${good} as expected, ${bad} not`);
process.exit(bad ? 1 : 0);
