// Validates Kubernetes objects against Kueue's CRD schemas (crds/), as the API server
// would on create with strict field validation: the version's openAPIV3Schema, each
// object schema closed to unknown fields unless it says x-kubernetes-preserve-unknown-fields.
// Usage: node validate.mjs FILE...  (each FILE: JSON or YAML, one object, a kind: List,
// or several YAML documents). Prints "valid KIND NAME" or "INVALID KIND NAME: why" per
// object; exits 1 when any object is invalid or has no schema. Test tooling only.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Ajv from 'ajv';
import YAML from 'yaml';

const here = path.dirname(fileURLToPath(import.meta.url));
const schemas = new Map();   // "group/version Kind" -> compiled validator
const ajv = new Ajv({ strict: false, allErrors: true });
// the formats the CRDs use, checked for real (not ignored)
ajv.addFormat('date-time', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/i);
ajv.addFormat('int32', { type: 'number', validate: (n) => Number.isInteger(n) && n >= -2147483648 && n <= 2147483647 });
ajv.addFormat('int64', { type: 'number', validate: (n) => Number.isInteger(n) });

// Kubernetes' structural schemas -> JSON Schema: unknown fields refused (pruning is what
// the API server does; refusing them makes a field gpuaas invents fail the test), and Go's
// (?i) case-insensitive prefix, which JavaScript's RegExp lacks, spelled out.
function convert(s, top) {
  if (Array.isArray(s)) return s.map((x) => convert(x, false));
  if (!s || typeof s !== 'object') return s;
  const o = {};
  for (const [k, v] of Object.entries(s)) o[k] = k === 'properties' || k === 'default' ? v : convert(v, false);
  if (o.properties) {
    o.properties = Object.fromEntries(Object.entries(s.properties).map(([k, v]) => [k, convert(v, false)]));
    if (!('additionalProperties' in s) && !s['x-kubernetes-preserve-unknown-fields']) o.additionalProperties = false;
  }
  if (typeof o.pattern === 'string' && o.pattern.includes('(?i)'))
    o.pattern = o.pattern.replace('(?i)', '').replaceAll('a-z', 'a-zA-Z');
  return o;
}

for (const f of fs.readdirSync(path.join(here, 'crds')).filter((f) => f.endsWith('.yaml'))) {
  const crd = YAML.parse(fs.readFileSync(path.join(here, 'crds', f), 'utf8'));
  for (const v of crd.spec.versions)
    schemas.set(`${crd.spec.group}/${v.name} ${crd.spec.names.kind}`, ajv.compile(convert(v.schema.openAPIV3Schema, true)));
}

let bad = 0, n = 0;
function check(obj, where) {
  if (obj && obj.kind === 'List' && Array.isArray(obj.items)) { obj.items.forEach((x) => check(x, where)); return; }
  n++;
  const kind = obj && obj.kind, name = obj && obj.metadata && obj.metadata.name;
  const v = schemas.get(`${obj && obj.apiVersion} ${kind}`);
  if (!v) { bad++; console.log(`INVALID ${kind} ${name} (${where}): no schema for ${obj && obj.apiVersion} ${kind}`); return; }
  if (v(obj)) { console.log(`valid ${kind} ${name}`); return; }
  bad++;
  console.log(`INVALID ${kind} ${name} (${where}): ` +
    v.errors.map((e) => `${e.instancePath || '/'} ${e.message}${e.params && e.params.additionalProperty ? ` (${e.params.additionalProperty})` : ''}`).join('; '));
}
for (const file of process.argv.slice(2)) {
  const text = fs.readFileSync(file, 'utf8');
  for (const doc of YAML.parseAllDocuments(text)) {
    if (doc.errors.length) { bad++; console.log(`INVALID (${file}): ${doc.errors[0].message}`); continue; }
    const obj = doc.toJS();
    if (obj !== null) check(obj, file);
  }
}
if (!n) { console.log('no object to validate'); process.exit(1); }
process.exit(bad ? 1 : 0);
