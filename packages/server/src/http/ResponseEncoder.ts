/**
 * Encoding a handler's answer through the contract's success schema, with a
 * fast path for the schemas whose encoding only copies: structs, arrays,
 * `Schema.Class` instances, unions and literals of strings, numbers, booleans
 * and null, with their refinements checked. Compiled once per endpoint from
 * the schema's AST; for those it builds exactly what the schema's encoder
 * builds — each declared property in the schema's order, nothing undeclared —
 * in a plain walk, where the parser spends most of a read's encoding (most of
 * a conversations page's) on its machinery. Anything it does not
 * recognise in the schema disables it for the endpoint; anything unexpected in
 * a value makes it give up for that answer, and the schema's encoder runs and
 * returns the value or the precise error (as ActionRowReader does for rows).
 */
import { Either, Option, type ParseResult, Schema } from "effect"
import * as AST from "effect/SchemaAST"

const MISS: unique symbol = Symbol("ResponseEncoder.MISS")
type Walk = (value: unknown) => unknown

const OPTIONS: AST.ParseOptions = {}

const isRecord = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** The walk for a schema, or undefined when the schema holds something whose encoding does more than copy. */
const compile = (ast: AST.AST): Walk | undefined => {
  switch (ast._tag) {
    case "StringKeyword":
      return (value) => (typeof value === "string" ? value : MISS)
    case "NumberKeyword":
      return (value) => (typeof value === "number" ? value : MISS)
    case "BooleanKeyword":
      return (value) => (typeof value === "boolean" ? value : MISS)
    case "UndefinedKeyword":
      return (value) => (value === undefined ? value : MISS)
    case "Literal": {
      const literal = ast.literal
      return (value) => (value === literal ? value : MISS)
    }
    case "Refinement": {
      const from = compile(ast.from)
      if (from === undefined) return undefined
      return (value) => {
        const out = from(value)
        return out === MISS || Option.isSome(ast.filter(value, OPTIONS, ast)) ? MISS : out
      }
    }
    case "Union": {
      const members: Array<Walk> = []
      for (const member of ast.types) {
        const walk = compile(member)
        if (walk === undefined) return undefined
        members.push(walk)
      }
      return (value) => {
        for (const member of members) {
          const out = member(value)
          if (out !== MISS) return out
        }
        return MISS
      }
    }
    case "TupleType": {
      // Arrays only (one rest element, no fixed elements).
      const [rest, ...more] = ast.rest
      if (ast.elements.length > 0 || rest === undefined || more.length > 0) return undefined
      const item = compile(rest.type)
      if (item === undefined) return undefined
      return (value) => {
        if (!Array.isArray(value)) return MISS
        const out: Array<unknown> = new Array(value.length)
        for (let i = 0; i < value.length; i++) {
          const encoded = item(value[i])
          if (encoded === MISS) return MISS
          out[i] = encoded
        }
        return out
      }
    }
    case "TypeLiteral": {
      if (ast.indexSignatures.length > 0) return undefined
      const properties: Array<{ readonly name: string; readonly walk: Walk; readonly optional: boolean }> = []
      for (const property of ast.propertySignatures) {
        const walk = compile(property.type)
        if (walk === undefined || typeof property.name !== "string") return undefined
        properties.push({ name: property.name, walk, optional: property.isOptional })
      }
      return (value) => {
        if (!isRecord(value)) return MISS
        const out: Record<string, unknown> = {}
        for (const { name, optional, walk } of properties) {
          if (!Object.hasOwn(value, name)) {
            if (optional) continue
            // A required property that is absent is judged as undefined, as the parser does.
            if (walk(undefined) === MISS) return MISS
            continue
          }
          const encoded = walk(value[name])
          if (encoded === MISS) return MISS
          out[name] = encoded
        }
        return out
      }
    }
    case "Transformation": {
      // A `Schema.Class`: an instance of the class (its declaration), encoded as its fields' struct.
      const isClass = ast.to._tag === "Declaration" && Option.isSome(AST.getSurrogateAnnotation(ast.to)) &&
        ast.transformation._tag === "FinalTransformation" && ast.from._tag === "TypeLiteral"
      if (!isClass) return undefined
      const fields = compile(ast.from)
      if (fields === undefined) return undefined
      const isInstance = Schema.is(Schema.make(ast.to))
      return (value) => (isInstance(value) ? fields(value) : MISS)
    }
    case "Suspend": {
      let walk: Walk | undefined
      let compiled = false
      return (value) => {
        if (!compiled) {
          walk = compile(ast.f())
          compiled = true
        }
        return walk === undefined ? MISS : walk(value)
      }
    }
    default:
      return undefined
  }
}

/** The encoder of a success schema: the fast walk where it applies, the schema's own encoder otherwise. */
export const responseEncoder = (
  schema: Schema.Schema<unknown, unknown, never>
): (value: unknown) => Either.Either<unknown, ParseResult.ParseError> => {
  const encode = Schema.encodeUnknownEither(schema)
  const walk = compile(schema.ast)
  if (walk === undefined) return encode
  return (value) => {
    const out = walk(value)
    return out === MISS ? encode(value) : Either.right(out)
  }
}

/** Whether a schema is encoded by the fast walk (the tests' guard that the contract's schemas are). */
export const isFast = (schema: Schema.Schema.Any): boolean => compile(schema.ast) !== undefined
