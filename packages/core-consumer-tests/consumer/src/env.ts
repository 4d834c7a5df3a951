/** Where the server is and which key to use, from the environment the test sets. */
export const setting = (name: string): string => {
  const value = process.env[name]
  if (value === undefined || value === "") throw new Error(`${name} is not set`)
  return value
}
