// Writes src/schema.ts, the contract's types, with openapi-typescript's
// Node API: node scripts/generate.mjs SPEC OUT (npm run generate).
//
// One option beyond the defaults: openapi-typescript's documented
// `transform` types `format: binary` (the training upload's `csv`) as
// Blob, which is what a browser or Node sends in a multipart part; the
// default would be string.
import fs from "node:fs";
import { pathToFileURL } from "node:url";
import ts from "typescript";
import openapiTS, { astToString } from "openapi-typescript";

const [spec, out] = process.argv.slice(2);
if (!spec || !out) {
  console.error("usage: node scripts/generate.mjs SPEC OUT");
  process.exit(2);
}
const BLOB = ts.factory.createTypeReferenceNode(ts.factory.createIdentifier("Blob"));
const NULL = ts.factory.createLiteralTypeNode(ts.factory.createNull());

const ast = await openapiTS(pathToFileURL(spec), {
  transform(schemaObject) {
    if (schemaObject.format === "binary") {
      return schemaObject.nullable ? ts.factory.createUnionTypeNode([BLOB, NULL]) : BLOB;
    }
    return undefined;
  },
});
const header = "// Generated from api/openapi.yaml by scripts/generate.mjs (npm run generate). Do not edit.\n\n";
fs.writeFileSync(out, header + astToString(ast));
