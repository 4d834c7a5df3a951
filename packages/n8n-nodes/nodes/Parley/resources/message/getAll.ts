/** Message → Get Many: GET /messages with status, since and number filters, following nextCursor. */
import { getManyAction } from '../../shared/actions';
import { messageKind } from './kind';

export const getAll = getManyAction(messageKind);
