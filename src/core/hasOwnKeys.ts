/**
 * Whether `object` has an own enumerable string key, without building the
 * list of its keys (`Object.keys(o).length > 0` allocates an array): the run
 * and its wiring ask it of every task's answers and input requests, most of
 * which are empty (nothing made per live task that it does not need).
 */
export function hasOwnKeys(object: object): boolean {
  for (const key in object) if (Object.hasOwn(object, key)) return true;
  return false;
}
