// Generates the openapi-typescript types of the contract, as a console team
// would with the generator's Node API: node gen-openapi-typescript.mjs SPEC OUT.
//
// The one option beyond the defaults is openapi-typescript's documented
// `transform` for file uploads: `format: binary` (the training upload's
// `csv`) becomes Blob, so a Blob can be sent. Without it the generator
// types the part as string.
import fs from "node:fs";
import { pathToFileURL } from "node:url";
import ts from "typescript";
import openapiTS, { astToString } from "openapi-typescript";

const [spec, out] = process.argv.slice(2);
if (!spec || !out) {
  console.error("usage: node gen-openapi-typescript.mjs SPEC OUT");
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
fs.writeFileSync(out, astToString(ast));
