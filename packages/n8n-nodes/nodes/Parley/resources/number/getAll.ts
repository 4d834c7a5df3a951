/** Number → Get Many: GET /numbers, one output item per number. */
import { itemListAction } from '../../shared/listing';

export const getAll = itemListAction('/numbers');
