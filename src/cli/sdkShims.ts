/**
 * The v2 SDK's Node shims (`@modelcontextprotocol/server/_shims`) as the
 * bundled CLI sees them: scripts/build.js resolves the SDK's own import of
 * them to this module (cold start).
 *
 * The SDK's shim module imports its bundled copy of Ajv at load to export
 * `DefaultJsonSchemaValidator`, which every SDK server builds but only uses
 * to validate against a JSON Schema (an elicitation's requested schema, a
 * `fromJsonSchema` tool). Loading it cost 15–23 ms of every
 * `taskvisor serve --stdio` start (measured alone), most of a stdio answer's
 * time above the bare SDK. Here the validator is the SDK's own class, loaded
 * (through the SDK's CommonJS build of the same shims) the first time a
 * schema is compiled: validation results are the SDK's.
 */
import { createRequire } from 'node:module';
import process from 'node:process';
import type { JsonSchemaType, JsonSchemaValidator } from '@modelcontextprotocol/server';
import type { DefaultJsonSchemaValidator as SdkValidator } from '@modelcontextprotocol/server/_shims';

type SdkValidatorClass = typeof SdkValidator;

let sdkValidatorClass: SdkValidatorClass | undefined;

/** The SDK's `DefaultJsonSchemaValidator` (Ajv), loaded on first use. */
function loadSdkValidator(): SdkValidatorClass {
  sdkValidatorClass ??= (
    createRequire(import.meta.url)('@modelcontextprotocol/server/_shims') as { DefaultJsonSchemaValidator: SdkValidatorClass }
  ).DefaultJsonSchemaValidator;
  return sdkValidatorClass;
}

/** The SDK's JSON Schema validator, built (with Ajv) on the first `getValidator`. */
export class DefaultJsonSchemaValidator {
  private inner: SdkValidator | undefined;

  /** @param ajv a pre-configured Ajv instance, as the SDK's constructor takes. */
  constructor(private readonly ajv?: ConstructorParameters<SdkValidatorClass>[0]) {}

  getValidator<T>(schema: JsonSchemaType): JsonSchemaValidator<T> {
    this.inner ??= this.ajv === undefined ? new (loadSdkValidator())() : new (loadSdkValidator())(this.ajv);
    return this.inner.getValidator<T>(schema);
  }
}

export { process };
