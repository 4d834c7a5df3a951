/** AI Call → Get Many: GET /ai-calls with status, since and number filters, following nextCursor. */
import { getManyAction } from '../../shared/actions';
import { aiCallKind } from './kind';

export const getAll = getManyAction(aiCallKind);
