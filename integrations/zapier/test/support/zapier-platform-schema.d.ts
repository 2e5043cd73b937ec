/** The part of `zapier-platform-schema` (shipped without types) that the tests call. */
declare module "zapier-platform-schema" {
  const schema: {
    readonly validateAppDefinition: (definition: unknown) => { readonly errors: ReadonlyArray<unknown> }
  }
  export default schema
}
