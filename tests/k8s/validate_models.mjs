// Validates Kubernetes objects that are not Kueue's (a Job, ConfigMap, Node, Namespace,
// an Argo CD ApplicationSet or Application) with the @kubernetes-models npm packages: each
// model's validate() checks the object against the Kubernetes (or Argo CD) OpenAPI schema
// and throws when it does not fit. Usage: node validate_models.mjs FILE... (each FILE YAML
// or JSON, one or several documents). Prints "valid KIND NAME" or "INVALID KIND NAME:
// why" per object; exits 1 when any object is invalid or of a kind it has no model for.
// Kueue's kinds are validate.mjs's (against Kueue's CRDs). Test tooling only.
import fs from 'node:fs';
import YAML from 'yaml';
import { Job } from 'kubernetes-models/batch/v1';
import { ConfigMap, Namespace, Node } from 'kubernetes-models/v1';
import { Application, ApplicationSet } from '@kubernetes-models/argo-cd/argoproj.io/v1alpha1';

const models = new Map([
  ['batch/v1 Job', Job],
  ['v1 ConfigMap', ConfigMap],
  ['v1 Node', Node],
  ['v1 Namespace', Namespace],
  ['argoproj.io/v1alpha1 ApplicationSet', ApplicationSet],
  ['argoproj.io/v1alpha1 Application', Application],
]);

let bad = 0, n = 0;
function check(obj, where) {
  n++;
  const kind = obj && obj.kind, name = obj && obj.metadata && obj.metadata.name;
  const Model = models.get(`${obj && obj.apiVersion} ${kind}`);
  if (!Model) { bad++; console.log(`INVALID ${kind} ${name} (${where}): no model for ${obj && obj.apiVersion} ${kind}`); return; }
  try {
    new Model(obj).validate();
    console.log(`valid ${kind} ${name}`);
  } catch (e) {
    bad++;
    const why = e && e.errors ? e.errors.map((x) => `${x.instancePath || '/'} ${x.message}`).join('; ') : String(e && e.message);
    console.log(`INVALID ${kind} ${name} (${where}): ${why}`);
  }
}
for (const file of process.argv.slice(2)) {
  for (const doc of YAML.parseAllDocuments(fs.readFileSync(file, 'utf8'))) {
    if (doc.errors.length) { bad++; console.log(`INVALID (${file}): ${doc.errors[0].message}`); continue; }
    const obj = doc.toJS();
    if (obj !== null) check(obj, file);
  }
}
if (!n) { console.log('no object to validate'); process.exit(1); }
process.exit(bad ? 1 : 0);
