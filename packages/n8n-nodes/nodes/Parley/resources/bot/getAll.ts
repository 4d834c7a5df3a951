/** Bot → Get Many: GET /bots, one output item per bot. */
import { itemListAction } from '../../shared/listing';

export const getAll = itemListAction('/bots');
