/** Template → Get Many: GET /templates, one output item per template. */
import { itemListAction } from '../../shared/listing';

export const getAll = itemListAction('/templates');
